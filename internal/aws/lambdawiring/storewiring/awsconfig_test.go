package storewiring

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func TestAWSConfigReadsWhatLambdaSets(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_SESSION_TOKEN", "session")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:9324")
	t.Setenv("AWS_REQUEST_CHECKSUM_CALCULATION", "WHEN_REQUIRED")
	cfg, err := AWSConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != "eu-west-1" {
		t.Errorf("region %q, want eu-west-1", cfg.Region)
	}
	creds, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil || creds.AccessKeyID != "AKIDEXAMPLE" || creds.SecretAccessKey != "secret" || creds.SessionToken != "session" {
		t.Errorf("credentials %+v, %v; want the execution role's from the environment", creds, err)
	}
	if ep := aws.ToString(sqs.NewFromConfig(cfg).Options().BaseEndpoint); ep != "http://127.0.0.1:9324" {
		t.Errorf("SQS endpoint %q, want AWS_ENDPOINT_URL_SQS", ep)
	}
	if ep := dynamodb.NewFromConfig(cfg).Options().BaseEndpoint; ep != nil {
		t.Errorf("DynamoDB endpoint %q, want the default", *ep)
	}
	if cfg.RequestChecksumCalculation != aws.RequestChecksumCalculationWhenRequired {
		t.Errorf("request checksum mode %v, want when_required", cfg.RequestChecksumCalculation)
	}
}

func TestAWSConfigRefusesWhatItCannotUse(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"no region", map[string]string{"AWS_REGION": "", "AWS_DEFAULT_REGION": ""}},
		{"bad checksum mode", map[string]string{"AWS_REGION": "us-east-1", "AWS_RESPONSE_CHECKSUM_VALIDATION": "sometimes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			if _, err := AWSConfig(context.Background()); err == nil {
				t.Errorf("AWSConfig accepted %v", tt.env)
			}
		})
	}
}

func TestAWSConfigWithoutCredentialsFailsTheCallNotTheInit(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	cfg, err := AWSConfig(context.Background())
	if err != nil {
		t.Fatalf("init failed: %v", err)
	}
	if _, err := cfg.Credentials.Retrieve(context.Background()); err == nil {
		t.Error("credentials retrieved from an empty environment")
	}
}
