package adaptertest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPolicyRaceCaught is the proof for the policy races: against an
// adapter whose transactions roll nothing back, a denied policy keeps the
// charges of the rules decided before the one that denied, and the case
// fails; against the memory adapter unbroken it passes.
func TestPolicyRaceCaught(t *testing.T) {
	for _, name := range []string{"PolicyAllOrNothing/pools=1", "PolicyAllOrNothing/pools=4", "PolicyAllOrNothingGCRA/pools=4", "PolicyAtTheEdges"} {
		t.Run(name, func(t *testing.T) {
			c := caseNamed(t, rateLimitCases(), name)
			rec := runRecorded(t, brokenMaker(keepsOnError), c)
			require.True(t, rec.Failed(), "an adapter that rolls nothing back passed %s\ncontract: %s", c.name, c.contract)
			t.Logf("caught: %s", rec.summary())
			rec = runRecorded(t, brokenMaker(0), c)
			require.False(t, rec.Failed(), "%v", rec.messages)
		})
	}
}
