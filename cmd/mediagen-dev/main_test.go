package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// What a developer types that cannot run is refused with the usage exit
// code and a line naming why, before anything is built or started.
func TestRunRefusesWhatCannotRun(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"nothing", nil, exitUsage, "usage: mediagen-dev"},
		{"help", []string{"-h"}, exitOK, "usage: mediagen-dev"},
		{"an unknown command", []string{"deploy"}, exitUsage, `unknown command "deploy"`},
		{"the deployed shape off loopback", []string{"lambdas", "--addr", "0.0.0.0:8080"}, exitUsage, "loopback only"},
		{"a bad log level", []string{"lambdas", "--log-level", "loud"}, exitUsage, "--log-level"},
		{"a stray argument", []string{"lambdas", "now"}, exitUsage, `unexpected argument "now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.says) {
				t.Errorf("run %q: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), tt.code, tt.says)
			}
		})
	}
}
