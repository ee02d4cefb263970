package sluicegrpc_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/core/memory"
	"github.com/sluice-go/sluice/core/ratelimit"
	sluicegrpc "github.com/sluice-go/sluice/middleware/grpc"
	sluicehttp "github.com/sluice-go/sluice/middleware/http"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	grpchealth "google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// exampleServer serves the standard health service with opts on a
// loopback port and returns a client of it and a function that stops both.
func exampleServer(opts ...grpc.ServerOption) (healthpb.HealthClient, func()) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, grpchealth.NewServer())
	go srv.Serve(lis)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	return healthpb.NewHealthClient(conn), func() { conn.Close(); srv.Stop() }
}

func ExampleUnaryRateLimit() {
	limiter, err := ratelimit.New(ratelimit.Memory(10_000))
	if err != nil {
		panic(err)
	}
	limit, err := sluicegrpc.UnaryRateLimit(sluicegrpc.Config{
		Limiter: limiter,
		Default: ratelimit.Rule{Window: time.Minute, Max: 100},
		Methods: map[string]ratelimit.Rule{"/grpc.health.v1.Health/Check": {Window: time.Minute, Max: 2}},
	})
	if err != nil {
		panic(err)
	}
	client, stop := exampleServer(grpc.UnaryInterceptor(limit))
	defer stop()

	for range 3 {
		var header metadata.MD
		_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}, grpc.Header(&header))
		st := status.Convert(err)
		fmt.Println(st.Code(), "remaining", header.Get(sluicegrpc.MetadataRemaining))
		for _, d := range st.Details() {
			if info, ok := d.(*errdetails.RetryInfo); ok {
				fmt.Println("retry in", info.RetryDelay.AsDuration().Round(time.Minute))
			}
		}
	}
	// Output:
	// OK remaining [1]
	// OK remaining [0]
	// ResourceExhausted remaining [0]
	// retry in 1m0s
}

func ExampleUnaryAPIKey() {
	ctx := context.Background()
	db, _ := core.New(memory.New())
	keys, _ := apikey.New(db)
	plaintext, _, err := keys.Create(ctx, apikey.CreateParams{ReferenceID: "user-42"})
	if err != nil {
		panic(err)
	}
	requireKey, err := sluicegrpc.UnaryAPIKey(keys)
	if err != nil {
		panic(err)
	}
	// A handler finds the verified key with sluicegrpc.KeyFromContext(ctx).
	client, stop := exampleServer(grpc.UnaryInterceptor(requireKey))
	defer stop()

	for _, k := range []string{plaintext, "", "sk_wrong"} {
		callCtx := ctx
		if k != "" {
			callCtx = metadata.AppendToOutgoingContext(ctx, "x-api-key", k)
		}
		_, err := client.Check(callCtx, &healthpb.HealthCheckRequest{})
		st := status.Convert(err)
		fmt.Printf("%v %q\n", st.Code(), st.Message())
	}
	// Output:
	// OK ""
	// Unauthenticated "missing API key in metadata x-api-key"
	// Unauthenticated "invalid API key"
}

// With sluicehttp.HeadersIETF the metadata carry the draft's fields as
// sluicehttp writes them, and a denial's ErrorInfo names the rule that
// denied.
func ExampleConfig_headers() {
	limiter, err := ratelimit.New(ratelimit.Memory(10_000))
	if err != nil {
		panic(err)
	}
	limit, err := sluicegrpc.UnaryRateLimit(sluicegrpc.Config{
		Limiter: limiter,
		Default: ratelimit.Rule{Name: "burst", Window: time.Minute, Max: 1},
		Headers: sluicehttp.HeadersIETF,
	})
	if err != nil {
		panic(err)
	}
	client, stop := exampleServer(grpc.UnaryInterceptor(limit))
	defer stop()

	for range 2 {
		var header metadata.MD
		_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}, grpc.Header(&header))
		st := status.Convert(err)
		fmt.Println(st.Code(), header.Get(sluicegrpc.MetadataPolicy), header.Get(sluicegrpc.MetadataRateLimit)[0][:12]) // t depends on the wall clock
		for _, d := range st.Details() {
			if info, ok := d.(*errdetails.ErrorInfo); ok {
				fmt.Println("violated:", info.Metadata[sluicegrpc.MetadataViolatedPolicies])
			}
		}
	}
	// Output:
	// OK ["burst";q=1;w=60] "burst";r=0;
	// ResourceExhausted ["burst";q=1;w=60] "burst";r=0;
	// violated: burst
}
