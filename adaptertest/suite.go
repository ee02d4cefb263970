package adaptertest

import (
	"testing"

	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// Run runs the whole conformance suite against the adapters newHarness
// makes: the contract cases (the IncrementOne contract and the rest of the
// adapter surface), the race cases (contention retried inside the adapter
// among them), and the rate-limit and API-key races. Each case is a
// subtest on fresh tables, skipped with the reason when the adapter or the
// harness lacks what it needs. Run it from a test of your adapter's
// package:
//
//	func TestConformance(t *testing.T) { adaptertest.Run(t, newHarness) }
func Run(t *testing.T, newHarness HarnessMaker) {
	open := func(t *testing.T, needs need) *Fixture {
		t.Helper()
		return newFixture(t, newHarness, needs)
	}
	t.Run("Contract", func(t *testing.T) { runCases(t, contractCases(), open) })
	t.Run("Race", func(t *testing.T) { runCases(t, raceCases(), open) })
	t.Run("RateLimit", func(t *testing.T) { runCases(t, rateLimitCases(), open) })
	t.Run("APIKey", func(t *testing.T) { runCases(t, apiKeyCases(), open) })
}

// dbCase is a case of [Run].
type dbCase = testCase[*Fixture]

// contractCases are the sequential cases, one per sentence of the adapter
// contract, then the IncrementOne ones again through core's transaction
// fallback (which is built on the adapter's FindOne and UpdateMany, so
// they must keep the same contract).
func contractCases() []dbCase {
	return []dbCase{
		{"OptionalInterfaces", ruleOptionalInterfaces, 0, caseOptionalInterfaces},
		{"PositiveDelta", rulePositiveDelta, 0, casePositiveDelta},
		{"NegativeDelta", ruleNegativeDelta, 0, caseNegativeDelta},
		{"SeveralDeltasAndSet", ruleSeveralDeltasAndSet, 0, caseSeveralDeltasAndSet},
		{"ReturnedRowIsStoredRow", ruleReturnedRowIsStoredRow, 0, caseReturnedRowIsStoredRow},
		{"ReturningSomeFields", ruleReturningSomeFields, 0, caseReturningSomeFields},
		{"GuardMissChangesNothing", ruleGuardMissChangesNothing, 0, caseGuardMissChangesNothing},
		{"EqNilIsNull", ruleEqNilIsNull, 0, caseEqNilIsNull},
		{"DeltaOnNullStaysNull", ruleDeltaOnNullStaysNull, 0, caseDeltaOnNullStaysNull},
		{"NullSatisfiesNoComparison", ruleNullSatisfiesNoComparison, 0, caseNullSatisfiesNoComparison},
		{"SeveralRowsMatchOneChanges", ruleSeveralRowsMatchOneChanges, 0, caseSeveralRowsMatchOneChanges},
		{"InvalidBeforeIO", ruleInvalidBeforeIO, 0, caseInvalidBeforeIO},
		{"IdenticalRewriteIsAMatch", ruleIdenticalRewriteIsAMatch, 0, caseIdenticalRewriteIsAMatch},
		{"TimesRoundTripAcrossZones", ruleTimesRoundTripAcrossZones, 0, caseTimesRoundTripAcrossZones},
		{"CreateReturnsStoredRow", ruleCreateReturnsStoredRow, 0, caseCreateReturnsStoredRow},
		{"FindOneFirstInKeyOrder", ruleFindOneFirstInKeyOrder, 0, caseFindOneFirstInKeyOrder},
		{"FindManySortLimitOffset", ruleFindManySortLimitOffset, 0, caseFindManySortLimitOffset},
		{"UpdateAtMostOne", ruleUpdateAtMostOne, 0, caseUpdateAtMostOne},
		{"UpdateManyCountsMatched", ruleUpdateManyCountsMatched, 0, caseUpdateManyCountsMatched},
		{"DeleteAtMostOne", ruleDeleteAtMostOne, 0, caseDeleteAtMostOne},
		{"DeleteManyAndCount", ruleDeleteManyAndCount, 0, caseDeleteManyAndCount},
		{"UniqueConflict", ruleUniqueConflict, 0, caseUniqueConflict},
		{"InTxCommits", ruleInTxCommits, transactions, caseInTxCommits},
		{"InTxRollsBack", ruleInTxRollsBack, transactions, caseInTxRollsBack},
		{"NestedTransactionRollsBackItsOwnWrites", ruleNestedTransaction, transactions, caseNestedTransaction},
		{"NestedInTxRollsBackItsOwnWrites", ruleNestedInTx, transactions, caseNestedInTx},
		{"UnstorableStringsRefusedBeforeIO", ruleUnstorableStrings, 0, caseUnstorableStrings},
		{"DistinctStringsStayDistinct", ruleDistinctStrings, 0, caseDistinctStrings},
		{"IncrementOverflowRefused", ruleIncrementOverflow, 0, caseIncrementOverflow},
		{"ConflictInsideTransactionKeepsItUsable", ruleConflictInTx, transactions, caseConflictInTx},
		{"Operator_eq", ruleOperator, 0, caseOperator("eq")},
		{"Operator_ne", ruleOperator, 0, caseOperator("ne")},
		{"Operator_lt", ruleOperator, 0, caseOperator("lt")},
		{"Operator_lte", ruleOperator, 0, caseOperator("lte")},
		{"Operator_gt", ruleOperator, 0, caseOperator("gt")},
		{"Operator_gte", ruleOperator, 0, caseOperator("gte")},
		{"Operator_in", ruleOperator, 0, caseOperator("in")},
		{"Operator_notin", ruleOperator, 0, caseOperator("not in")},

		{"Fallback/PositiveDelta", rulePositiveDelta, viaFallback, casePositiveDelta},
		{"Fallback/NegativeDelta", ruleNegativeDelta, viaFallback, caseNegativeDelta},
		{"Fallback/SeveralDeltasAndSet", ruleSeveralDeltasAndSet, viaFallback, caseSeveralDeltasAndSet},
		{"Fallback/ReturnedRowIsStoredRow", ruleReturnedRowIsStoredRow, viaFallback, caseReturnedRowIsStoredRow},
		{"Fallback/GuardMissChangesNothing", ruleGuardMissChangesNothing, viaFallback, caseGuardMissChangesNothing},
		{"Fallback/EqNilIsNull", ruleEqNilIsNull, viaFallback, caseEqNilIsNull},
		{"Fallback/DeltaOnNullStaysNull", ruleDeltaOnNullStaysNull, viaFallback, caseDeltaOnNullStaysNull},
		{"Fallback/NullSatisfiesNoComparison", ruleNullSatisfiesNoComparison, viaFallback, caseNullSatisfiesNoComparison},
		{"Fallback/SeveralRowsMatchOneChanges", ruleSeveralRowsMatchOneChanges, viaFallback, caseSeveralRowsMatchOneChanges},
		{"Fallback/InvalidBeforeIO", ruleInvalidBeforeIO, viaFallback, caseInvalidBeforeIO},
		{"Fallback/IdenticalRewriteIsAMatch", ruleIdenticalRewriteIsAMatch, viaFallback, caseIdenticalRewriteIsAMatch},
		{"Fallback/TimesRoundTripAcrossZones", ruleTimesRoundTripAcrossZones, viaFallback, caseTimesRoundTripAcrossZones},
		{"Fallback/NestedInTxRollsBackItsOwnWrites", ruleNestedInTx, viaFallback, caseNestedInTx},
		{"Fallback/DistinctStringsStayDistinct", ruleDistinctStrings, viaFallback, caseDistinctStrings},
		{"Fallback/IncrementOverflowRefused", ruleIncrementOverflow, viaFallback, caseIncrementOverflow},
		{"Fallback/Operator_eq", ruleOperator, viaFallback, caseOperator("eq")},
		{"Fallback/Operator_ne", ruleOperator, viaFallback, caseOperator("ne")},
		{"Fallback/Operator_lt", ruleOperator, viaFallback, caseOperator("lt")},
		{"Fallback/Operator_lte", ruleOperator, viaFallback, caseOperator("lte")},
		{"Fallback/Operator_gt", ruleOperator, viaFallback, caseOperator("gt")},
		{"Fallback/Operator_gte", ruleOperator, viaFallback, caseOperator("gte")},
		{"Fallback/Operator_in", ruleOperator, viaFallback, caseOperator("in")},
		{"Fallback/Operator_notin", ruleOperator, viaFallback, caseOperator("not in")},
	}
}

// raceCases release many callers at once on one row or a few and check
// exact outcomes: on one pool, over several, and through the fallback.
func raceCases() []dbCase {
	const pools, fallback = severalPools, viaFallback
	return []dbCase{
		{"GuardedDecrement", ruleGuardedDecrement, 0, race(raceGuardedDecrement)},
		{"GuardedDecrementSeveralPools", ruleGuardedDecrement, pools, race(raceGuardedDecrement)},
		{"GuardedDecrementFallback", ruleGuardedDecrement, fallback, race(raceGuardedDecrement)},
		{"GuardedDecrementFallbackSeveralPools", ruleGuardedDecrement, fallback | pools, race(raceGuardedDecrement)},
		{"BoundedIncrement", ruleBoundedIncrement, 0, race(raceBoundedIncrement)},
		{"BoundedIncrementSeveralPools", ruleBoundedIncrement, pools, race(raceBoundedIncrement)},
		{"BoundedIncrementFallback", ruleBoundedIncrement, fallback, race(raceBoundedIncrement)},
		{"BoundedIncrementFallbackSeveralPools", ruleBoundedIncrement, fallback | pools, race(raceBoundedIncrement)},
		{"CASReset", ruleCASReset, 0, race(raceCASReset)},
		{"CASResetSeveralPools", ruleCASReset, pools, race(raceCASReset)},
		{"CASResetFallback", ruleCASReset, fallback, race(raceCASReset)},
		{"CASResetFallbackSeveralPools", ruleCASReset, fallback | pools, race(raceCASReset)},
		{"MultiRowGuard", ruleMultiRow, 0, race(raceMultiRow)},
		{"MultiRowGuardSeveralPools", ruleMultiRow, pools, race(raceMultiRow)},
		{"MultiRowGuardFallback", ruleMultiRow, fallback, race(raceMultiRow)},
		{"MultiRowGuardFallbackSeveralPools", ruleMultiRow, fallback | pools, race(raceMultiRow)},
		{"DeadlockVictimsRetried", ruleMixedWrites, 0, caseMixedWrites},
		{"FallbackBurstGetsThrough", ruleFallbackBurst, fallback, checked(fallbackBurst)},
	}
}

// rateLimitCases run sluice's limiter on the adapter: bursts of
// concurrent requests at one instant of a clock the case moves.
func rateLimitCases() []dbCase {
	fixed, betterAuth := ratelimit.FixedWindow, ratelimit.BetterAuthWindow
	return []dbCase{
		{"BurstOnFreshKey/pools=1/cost=1", ruleFreshBurst, 0, rlFreshBurst(fixed, 1, 1)},
		{"BurstOnFreshKey/pools=1/cost=3", ruleFreshBurst, 0, rlFreshBurst(fixed, 1, 3)},
		{"BurstOnFreshKey/pools=4/cost=1", ruleFreshBurst, 0, rlFreshBurst(fixed, rlPools, 1)},
		{"BurstOnFreshKey/pools=4/cost=3", ruleFreshBurst, 0, rlFreshBurst(fixed, rlPools, 3)},
		{"WindowRollDuringBurst/pools=1/late=0s", ruleWindowRoll, 0, rlWindowRoll(fixed, 1, 0)},
		{"WindowRollDuringBurst/pools=1/late=1.5s", ruleWindowRoll, 0, rlWindowRoll(fixed, 1, rlLate)},
		{"WindowRollDuringBurst/pools=4/late=0s", ruleWindowRoll, 0, rlWindowRoll(fixed, rlPools, 0)},
		{"WindowRollDuringBurst/pools=4/late=1.5s", ruleWindowRoll, 0, rlWindowRoll(fixed, rlPools, rlLate)},
		{"BurstOnFreshKeyBetterAuthWindow/pools=1/cost=1", ruleFreshBurst, 0, rlFreshBurst(betterAuth, 1, 1)},
		{"BurstOnFreshKeyBetterAuthWindow/pools=1/cost=3", ruleFreshBurst, 0, rlFreshBurst(betterAuth, 1, 3)},
		{"BurstOnFreshKeyBetterAuthWindow/pools=4/cost=1", ruleFreshBurst, 0, rlFreshBurst(betterAuth, rlPools, 1)},
		{"BurstOnFreshKeyBetterAuthWindow/pools=4/cost=3", ruleFreshBurst, 0, rlFreshBurst(betterAuth, rlPools, 3)},
		{"WindowRollDuringBurstBetterAuthWindow/pools=1/late=0s", ruleWindowRoll, 0, rlWindowRoll(betterAuth, 1, 0)},
		{"WindowRollDuringBurstBetterAuthWindow/pools=1/late=1.5s", ruleWindowRoll, 0, rlWindowRoll(betterAuth, 1, rlLate)},
		{"WindowRollDuringBurstBetterAuthWindow/pools=4/late=0s", ruleWindowRoll, 0, rlWindowRoll(betterAuth, rlPools, 0)},
		{"WindowRollDuringBurstBetterAuthWindow/pools=4/late=1.5s", ruleWindowRoll, 0, rlWindowRoll(betterAuth, rlPools, rlLate)},
		{"ColdLimitersOnLiveRow/pools=1", ruleColdBurst, 0, rlColdBurst(1)},
		{"ColdLimitersOnLiveRow/pools=4", ruleColdBurst, 0, rlColdBurst(rlPools)},
		{"GCRABurst/pools=1", ruleGCRA, 0, rlGCRA(1)},
		{"GCRABurst/pools=4", ruleGCRA, 0, rlGCRA(rlPools)},
		{"SlidingWindowBurst/pools=1", ruleSliding, 0, rlSliding(1)},
		{"SlidingWindowBurst/pools=4", ruleSliding, 0, rlSliding(rlPools)},
		{"CalendarDayAcrossMidnight/pools=1", ruleCalendar, 0, rlCalendar(1, consumeRule, "")},
		{"CalendarDayAcrossMidnight/pools=4", ruleCalendar, 0, rlCalendar(rlPools, consumeRule, "")},
		{"CalendarDayAcrossMidnightInPolicy/pools=4", ruleCalendarPolicy, transactions, rlCalendar(rlPools, consumePolicy, calendarPolicyRule)},
		{"PolicyAllOrNothing/pools=1", rulePolicy, transactions, rlPolicyRace(fixed, 1)},
		{"PolicyAllOrNothing/pools=4", rulePolicy, transactions, rlPolicyRace(fixed, rlPools)},
		{"PolicyAllOrNothingGCRA/pools=4", rulePolicy, transactions, rlPolicyRace(ratelimit.GCRA, rlPools)},
		{"PolicyAtTheEdges", rulePolicyEdges, transactions, checked(rlPolicyEdges)},
		{"HostileKeysAreStorable", ruleHostileKeys, 0, checked(rlHostileKeys)},
		{"RowDeletedBetweenReadAndWrite", ruleDeletedRow, 0, checked(rlDeletedRow)},
		{"EdgesAgainstBigModel", ruleEdges, 0, checked(rlEdges)},
		{"LeasesOverSeveralPools", ruleLeasePools, severalPools, checked(rlLeasePools)},
		{"InTx/CommitKeepsRollbackRefunds", ruleInTxKeeps, txHandles, rlInTxKeeps((*ratelimit.Limiter).In)},
		{"InTx/ClosedOrForeignRefused", ruleInTxRefused, txHandles, rlInTxRefused},
		{"InTx/Race/pools=1", ruleInTxRace, txHandles, rlInTxRace(1, (*ratelimit.Limiter).In)},
		{"InTx/Race/pools=4", ruleInTxRace, txHandles | severalPools, rlInTxRace(txPools, (*ratelimit.Limiter).In)},
	}
}

// apiKeyCases run sluice's key verifier on the adapter: many callers
// verifying one key at once. Named limits, owner limits and rerolls write
// inside transactions of their own.
func apiKeyCases() []dbCase {
	const pools, fallback, tx = severalPools, viaFallback, transactions | keyTables
	return []dbCase{
		{"LastUnit", ruleLastUnit, 0, keyRace(apiKeyLastUnit, raceRounds)},
		{"LastUnitSeveralPools", ruleLastUnit, pools, keyRace(apiKeyLastUnit, raceRounds)},
		{"LastUnitFallback", ruleLastUnit, fallback, keyRace(apiKeyLastUnit, raceRounds)},
		{"LastUnitFallbackSeveralPools", ruleLastUnit, fallback | pools, keyRace(apiKeyLastUnit, raceRounds)},
		{"RefillDue", ruleRefillDue, 0, keyRace(apiKeyRefillDue, raceRounds)},
		{"RefillDueSeveralPools", ruleRefillDue, pools, keyRace(apiKeyRefillDue, raceRounds)},
		{"RefillDueFallback", ruleRefillDue, fallback, keyRace(apiKeyRefillDue, raceRounds)},
		{"RefillDueFallbackSeveralPools", ruleRefillDue, fallback | pools, keyRace(apiKeyRefillDue, raceRounds)},
		{"RateLimitLastSlot", ruleRateLimitLastSlot, 0, keyRace(apiKeyRateLimitLastSlot, raceRounds)},
		{"RateLimitLastSlotSeveralPools", ruleRateLimitLastSlot, pools, keyRace(apiKeyRateLimitLastSlot, raceRounds)},
		{"RateLimitLastSlotFallback", ruleRateLimitLastSlot, fallback, keyRace(apiKeyRateLimitLastSlot, raceRounds)},
		{"RateLimitLastSlotFallbackSeveralPools", ruleRateLimitLastSlot, fallback | pools, keyRace(apiKeyRateLimitLastSlot, raceRounds)},
		{"PermissionRevoked", rulePermissionRevoked, 0, keyRace(apiKeyPermissionRevoked, raceRounds)},
		{"PermissionRevokedSeveralPools", rulePermissionRevoked, pools, keyRace(apiKeyPermissionRevoked, raceRounds)},
		{"PermissionRevokedFallback", rulePermissionRevoked, fallback, keyRace(apiKeyPermissionRevoked, raceRounds)},
		{"PermissionRevokedFallbackSeveralPools", rulePermissionRevoked, fallback | pools, keyRace(apiKeyPermissionRevoked, raceRounds)},
		// one round each: a transaction per caller, or four phases of 50
		{"NamedLimits", ruleNamedLimits, tx, keyRace(apiKeyNamedLimits, 1)},
		{"NamedLimitsSeveralPools", ruleNamedLimits, tx | pools, keyRace(apiKeyNamedLimits, 1)},
		{"OwnerLimits", ruleOwnerLimits, tx, keyRace(apiKeyOwnerLimits, 1)},
		{"OwnerLimitsSeveralPools", ruleOwnerLimits, tx | pools, keyRace(apiKeyOwnerLimits, 1)},
		{"AnchoredRefill", ruleAnchoredRefill, tx, keyRace(apiKeyAnchoredRefill, raceRounds)},
		{"AnchoredRefillSeveralPools", ruleAnchoredRefill, tx | pools, keyRace(apiKeyAnchoredRefill, raceRounds)},
		{"Rerolled", ruleRerolled, tx, keyRace(apiKeyRerolled, 1)},
		{"RerolledSeveralPools", ruleRerolled, tx | pools, keyRace(apiKeyRerolled, 1)},
		{"StoredTextRoundTrips", ruleStoredText, 0, checked(apiKeyStoredText)},
		{"AnswerIsStoredKey", ruleAnswerIsStoredKey, 0, checked(apiKeyAnswerIsStoredKey)},
		{"InTx/CommitKeepsRollbackRefunds", ruleInTxKeeps, txHandles, keyInTxKeeps((*apikey.Manager).In)},
		{"InTx/ClosedRefused", ruleInTxRefused, txHandles, keyInTxRefused},
		{"InTx/Race/pools=1", ruleInTxRace, txHandles, keyInTxRace(1, (*apikey.Manager).In)},
		{"InTx/Race/pools=4", ruleInTxRace, txHandles | severalPools, keyInTxRace(txPools, (*apikey.Manager).In)},
	}
}
