package lambdastack

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/polly"
	pollytypes "github.com/aws/aws-sdk-go-v2/service/polly/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/google/uuid"
)

// The Step Functions API and Polly behind moto's endpoint refuse what AWS
// refuses before any call runs, by AWS's names: an unsigned request
// (MissingAuthenticationTokenException), an access key AWS never issued
// (UnrecognizedClientException), a known key signed with the wrong
// secret (InvalidSignatureException). A refused StartExecution starts
// nothing.
func TestUnauthenticatedCallsAreRefusedAsAWSRefusesThem(t *testing.T) {
	l := shared(t)
	sm := l.StateMachines()["LongStoryStateMachine"]
	ctx := context.Background()

	name := "unsigned-" + uuid.NewString()
	req, err := http.NewRequest(http.MethodPost, l.Moto.Endpoint+"/",
		strings.NewReader(`{"stateMachineArn":"`+sm.ARN+`","name":"`+name+`","input":"{}"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Target", "AWSStepFunctions.StartExecution")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var answer struct {
		Type string `json:"__type"`
	}
	json.Unmarshal(raw, &answer)
	if resp.StatusCode != http.StatusBadRequest || answer.Type != "MissingAuthenticationTokenException" {
		t.Errorf("an unsigned StartExecution answered %d %s, want 400 MissingAuthenticationTokenException", resp.StatusCode, raw)
	}
	if _, _, ok := sm.Execution(name); ok {
		t.Error("an unsigned StartExecution started an execution")
	}

	wrongSecret := l.admin
	wrongSecret.SecretAccessKey = "not-" + wrongSecret.SecretAccessKey
	unknownKey := creds{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}
	narrate := l.roles["NarrateFunction"].creds
	narrate.SecretAccessKey = "not-" + narrate.SecretAccessKey
	for _, c := range []struct {
		name  string
		creds creds
		want  string
	}{
		{"wrong secret", wrongSecret, "InvalidSignatureException"},
		{"unknown key", unknownKey, "UnrecognizedClientException"},
	} {
		client := sfn.NewFromConfig(l.awsConfig(c.creds))
		name := "refused-" + uuid.NewString()
		_, err := client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(sm.ARN), Name: aws.String(name), Input: aws.String("{}")})
		if code := errorCodeOf(err); code != c.want {
			t.Errorf("StartExecution with %s answered %v, want %s", c.name, err, c.want)
		}
		if _, _, ok := sm.Execution(name); ok {
			t.Errorf("StartExecution with %s started an execution", c.name)
		}
		_, err = client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(sm.executionARN(name))})
		if code := errorCodeOf(err); code != c.want {
			t.Errorf("StopExecution with %s answered %v, want %s", c.name, err, c.want)
		}
	}
	for _, c := range []struct {
		name  string
		creds creds
		want  string
	}{
		{"the narrator's key with a wrong secret", narrate, "InvalidSignatureException"},
		{"an unknown key", unknownKey, "UnrecognizedClientException"},
	} {
		_, err := polly.NewFromConfig(l.awsConfig(c.creds)).SynthesizeSpeech(ctx, &polly.SynthesizeSpeechInput{
			Text: aws.String("hello"), VoiceId: pollytypes.VoiceIdJoanna, OutputFormat: pollytypes.OutputFormatMp3})
		if code := errorCodeOf(err); code != c.want {
			t.Errorf("SynthesizeSpeech with %s answered %v, want %s", c.name, err, c.want)
		}
	}
}

// errorCodeOf is an API error's code, or "".
func errorCodeOf(err error) string {
	var apiErr interface{ ErrorCode() string }
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}
