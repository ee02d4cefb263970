package sluiceredis

// ScriptHashes lists the SHA1 of every script, so tests can check that
// SCRIPT FLUSH removed them and that a later call loaded them again.
func ScriptHashes() []string {
	return []string{incrementScript.Hash(), boundedScript.Hash(), claimScript.Hash(), patchScript.Hash()}
}
