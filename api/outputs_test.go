package api_test

import (
	"slices"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/mediagen-dev/mediagen/api"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// TestRetentionChoicesFollowTheCode: the account's retention_days lists
// exactly the retentions an account may have.
func TestRetentionChoicesFollowTheCode(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				Account struct {
					Properties struct {
						Outputs struct {
							Properties struct {
								RetentionDays struct {
									Enum []int `yaml:"enum"`
								} `yaml:"retention_days"`
							} `yaml:"properties"`
						} `yaml:"outputs"`
					} `yaml:"properties"`
				} `yaml:"Account"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(api.OpenAPIYAML(), &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Components.Schemas.Account.Properties.Outputs.Properties.RetentionDays.Enum; !slices.Equal(got, domain.RetentionChoices) {
		t.Errorf("Account.outputs.retention_days lists %v, the code %v", got, domain.RetentionChoices)
	}
}
