package sluiceredis_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/ratelimit"
)

// A rate limiter and storage-only API keys on one Redis. It needs a Redis
// server, so it is compiled but not run.
func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()
	store, err := sluiceredis.New(client, sluiceredis.WithPrefix("myapp:"))
	if err != nil {
		panic(err)
	}

	limiter, err := ratelimit.New(ratelimit.Secondary(store))
	if err != nil {
		panic(err)
	}
	d, err := limiter.Consume(ctx, "203.0.113.7/login", ratelimit.Rule{Window: time.Minute, Max: 5})
	fmt.Println(d.Allowed, d.Remaining, err)

	keys, err := apikey.NewStorageOnly(store) // atomic claims: *Storage is a keystore.Claimer
	if err != nil {
		panic(err)
	}
	hundred := int64(100)
	plaintext, _, err := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user-42", Remaining: &hundred})
	if err != nil {
		panic(err)
	}
	res, err := keys.Verify(ctx, plaintext)
	fmt.Println(res.Valid, *res.Key.Remaining, err)
}

// Bad input is refused before any I/O: this storage's server does not even
// exist.
func ExampleStorage_Increment() {
	store, _ := sluiceredis.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
	_, err := store.Increment(context.Background(), "counter", 1, 1500*time.Millisecond)
	fmt.Println(err)
	// Output: sluiceredis: invalid request: ttl 1.5s is not a positive whole number of seconds
}

// Patch checks every field against keystore.Key before the script runs.
func ExampleStorage_Patch() {
	store, _ := sluiceredis.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
	_, _, err := store.Patch(context.Background(), "apikey:key:abc", map[string]any{"remaining": "ten"})
	fmt.Println(err)
	// Output: sluiceredis: patch: invalid request: field "remaining": "ten" is not an integer
}
