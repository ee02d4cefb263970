// Package sluicegrpc puts sluice's rate limiter and API-key verification
// in front of gRPC servers, as unary and stream server interceptors.
//
// [UnaryRateLimit] and [StreamRateLimit] count each call (a stream once,
// when it opens) on a ratelimit.Limiter, under a rule chosen per full
// method ([Config].Methods, with a Default), keyed by the peer's IP address
// grouped as sluicehttp.ClientKey groups it plus the method, or by
// [Config].Key. A denied call fails with codes.ResourceExhausted and an
// errdetails.RetryInfo; a storage failure with codes.Unavailable unless
// the limiter fails open; a key function's failure with codes.Internal,
// never a bypass. [UnaryAPIKey] and [StreamAPIKey] verify the key in the
// call's x-api-key metadata with the manager's own options ([Verify]) and
// put the verified key in the handler's context ([KeyFromContext]).
//
//	limit, err := sluicegrpc.UnaryRateLimit(sluicegrpc.Config{
//		Limiter: limiter,
//		Default: ratelimit.Rule{Window: time.Minute, Max: 100},
//		Methods: map[string]ratelimit.Rule{"/pkg.Search/Query": {Window: time.Second, Max: 5}},
//	})
//	if err != nil { … }
//	requireKey, err := sluicegrpc.UnaryAPIKey(keys, sluicegrpc.Verify(apikey.Cost(1)))
//	if err != nil { … }
//	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(limit, requireKey))
//
// Every denial and failure also carries an errdetails.ErrorInfo whose
// Reason is the code sluicehttp's middleware puts in its JSON bodies
// (RATE_LIMITED, INVALID_API_KEY, …) and whose Domain is [ErrorDomain];
// limited calls carry the Metadata* keys, the gRPC spelling
// of the RateLimit-* and Retry-After headers; with [Config].Headers set to
// sluicehttp.HeadersIETF, the draft's ratelimit-policy and ratelimit, one
// member per rule, as sluicehttp writes them, and a denial's ErrorInfo
// names the rules that denied ([MetadataViolatedPolicies]).
//
// This module depends on grpc; core stays standard-library only.
package sluicegrpc
