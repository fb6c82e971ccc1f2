package storewiring

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// AWSConfig is the function's AWS configuration, read from the environment
// Lambda gives every function: the region (AWS_REGION), the execution
// role's credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN), and for sam local and the tests the endpoints
// (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>) and the checksum modes
// (AWS_REQUEST_CHECKSUM_CALCULATION, AWS_RESPONSE_CHECKSUM_VALIDATION).
//
// It does not use config.LoadDefaultConfig on purpose: that chain links the
// STS, SSO, SSO-OIDC, sign-in and IMDS clients and the shared-config
// parser into every binary (about 1 MB each), for credential sources that a
// Lambda function never has; the chain's first source, the environment, is
// the one Lambda uses. It reads these with os.Getenv, as the SDK does: they
// are the runtime's, not the template's.
func AWSConfig(ctx context.Context) (aws.Config, error) {
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	if region == "" {
		return aws.Config{}, fmt.Errorf("load AWS configuration: AWS_REGION is not set")
	}
	cfg := aws.Config{Region: region, ConfigSources: []any{envEndpoints{}}}
	if key, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"); key != "" && secret != "" {
		cfg.Credentials = credentials.NewStaticCredentialsProvider(key, secret, os.Getenv("AWS_SESSION_TOKEN"))
	} else {
		// As with the SDK's chain, a missing credential fails the first call,
		// not the init.
		cfg.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, errors.New("no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (Lambda sets them from the execution role)")
		})
	}
	if ep := os.Getenv("AWS_ENDPOINT_URL"); ep != "" {
		cfg.BaseEndpoint = aws.String(ep)
	}
	var err error
	if cfg.RequestChecksumCalculation, err = checksumMode("AWS_REQUEST_CHECKSUM_CALCULATION", cfg.RequestChecksumCalculation,
		aws.RequestChecksumCalculationWhenSupported, aws.RequestChecksumCalculationWhenRequired); err != nil {
		return aws.Config{}, err
	}
	if cfg.ResponseChecksumValidation, err = checksumMode("AWS_RESPONSE_CHECKSUM_VALIDATION", cfg.ResponseChecksumValidation,
		aws.ResponseChecksumValidationWhenSupported, aws.ResponseChecksumValidationWhenRequired); err != nil {
		return aws.Config{}, err
	}
	return cfg, nil
}

// checksumMode reads a checksum setting of the environment, name:
// when_supported or when_required (any case) picks that mode, and unset
// keeps current (the SDK's default).
func checksumMode[M any](name string, current, supported, required M) (M, error) {
	switch v := strings.ToLower(os.Getenv(name)); v {
	case "":
		return current, nil
	case "when_supported":
		return supported, nil
	case "when_required":
		return required, nil
	default:
		return current, fmt.Errorf("load AWS configuration: %s is %q, not when_supported or when_required", name, v)
	}
}

// envEndpoints answers the service clients' question for a configured
// endpoint from AWS_ENDPOINT_URL_<SERVICE ID> (upper case, spaces as
// underscores), as the SDK's shared configuration does.
type envEndpoints struct{}

func (envEndpoints) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	name := "AWS_ENDPOINT_URL_" + strings.ToUpper(strings.ReplaceAll(sdkID, " ", "_"))
	if v := os.Getenv(name); v != "" {
		return v, true, nil
	}
	return "", false, nil
}
