package stepfunctions

import "strings"

// arn is the machine's ARN: Config.ARN, or one in a local account.
func (m *Machine) arn() string {
	if m.cfg.ARN != "" {
		return m.cfg.ARN
	}
	return "arn:aws:states:local:000000000000:stateMachine:" + m.name
}

// executionARN is the ARN of the machine's execution named name, as Step
// Functions makes it: the machine's ARN with :execution: for
// :stateMachine:, and the name after it.
func (m *Machine) executionARN(name string) string {
	return strings.Replace(m.arn(), ":stateMachine:", ":execution:", 1) + ":" + name
}
