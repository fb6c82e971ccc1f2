package lambdawiring

import (
	"slices"
	"testing"
)

// WEBHOOK_LOOPBACK_PORTS: empty (AWS) opens nothing; a list opens those
// ports; anything else fails the function's init rather than open less or
// more than was meant.
func TestWebhookLoopbackPorts(t *testing.T) {
	for _, c := range []struct {
		value string
		want  []uint16
		fails bool
	}{
		{value: "", want: nil},
		{value: "8080", want: []uint16{8080}},
		{value: " 8080, 9090 ,", want: []uint16{8080, 9090}},
		{value: "127.0.0.1:8080", fails: true},
		{value: "0", fails: true},
		{value: "65536", fails: true},
		{value: "http", fails: true},
	} {
		t.Setenv(EnvWebhookLoopbackPorts, c.value)
		got, err := webhookLoopbackPorts()
		if (err != nil) != c.fails || !slices.Equal(got, c.want) {
			t.Errorf("%q: ports %v, error %v; want %v (fails: %v)", c.value, got, err, c.want, c.fails)
		}
	}
}
