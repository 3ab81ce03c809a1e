package olm

import "testing"

// TestOLM is the life of an install through OLM, step by step: each step starts from
// what the ones before it left, so a failed step ends the scenario.
func TestOLM(t *testing.T) {
	for _, step := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"InstallTheOldestLinstorLine", installThroughOLM},
		{"NextLinstorLineWithARollback", nextLineWithARollback},
		{"UpgradeHoldsTheNextReleaseOnlyFromBackupOn", upgradeThroughOLM},
		{"FixForwardOnADegradedCluster", fixForwardWhileDegraded},
		{"ChannelSwitchMovesTheLinstorLine", channelSwitchMovesTheLine},
		{"WebhooksReachedThroughOLMService", webhooksReachedThroughOLMService},
		{"OperandsSurviveTheirOperator", operandsSurviveTheirOperator},
	} {
		if !t.Run(step.name, step.run) {
			t.Fatalf("step %s failed: the steps after it need what it leaves", step.name)
		}
	}
}
