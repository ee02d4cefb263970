package sluicegrpc_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core/driver"
	sluicegrpc "github.com/sluice-go/sluice/middleware/grpc"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// newClock is the tests' settable clock (adaptertest.Clock): it moves only
// when a test advances it, so windows and refills are crossed without
// sleeping.
func newClock() *adaptertest.Clock {
	return adaptertest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
}

// health is the service under test: the standard health service, whose
// Check is unary and Watch server-streaming. It counts the calls that
// reach it and sends the verified API key's owner as trailer "owner".
type health struct {
	healthpb.UnimplementedHealthServer
	checks, watches atomic.Int64
}

func owner(ctx context.Context) metadata.MD {
	if k, ok := sluicegrpc.KeyFromContext(ctx); ok {
		return metadata.Pairs("owner", k.ReferenceID)
	}
	return metadata.Pairs("owner", "")
}

func (h *health) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	h.checks.Add(1)
	_ = grpc.SetTrailer(ctx, owner(ctx))
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (h *health) Watch(_ *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	h.watches.Add(1)
	s.SetTrailer(owner(s.Context()))
	return s.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING})
}

// serve runs h on a real gRPC server on a loopback port with the
// interceptors of opts, and returns a real client of it.
func serve(t *testing.T, h *health, opts ...grpc.ServerOption) healthpb.HealthClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, h)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return healthpb.NewHealthClient(conn)
}

// call is one call's outcome as the client sees it.
type call struct {
	err             error
	header, trailer metadata.MD
}

func (c call) code() codes.Code { return status.Code(c.err) }

// reason is the ErrorInfo reason of the call's error ("" if none), after
// checking its domain.
func (c call) reason(t *testing.T) string {
	t.Helper()
	for _, d := range status.Convert(c.err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			if info.Domain != sluicegrpc.ErrorDomain {
				t.Errorf("ErrorInfo domain %q, want %q", info.Domain, sluicegrpc.ErrorDomain)
			}
			return info.Reason
		}
	}
	return ""
}

// retryDelay is the RetryInfo delay of the call's error (-1 if none).
func (c call) retryDelay() time.Duration {
	for _, d := range status.Convert(c.err).Details() {
		if info, ok := d.(*errdetails.RetryInfo); ok {
			return info.RetryDelay.AsDuration()
		}
	}
	return -1
}

func (c call) meta(key string) string {
	if v := c.header.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c call) owner() string {
	if v := c.trailer.Get("owner"); len(v) > 0 {
		return v[0]
	}
	return ""
}

func check(t *testing.T, client healthpb.HealthClient, md ...string) call {
	t.Helper()
	ctx := metadata.AppendToOutgoingContext(context.Background(), md...)
	var c call
	_, c.err = client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&c.header), grpc.Trailer(&c.trailer))
	return c
}

// watch opens a Watch stream and reads it to its end.
func watch(t *testing.T, client healthpb.HealthClient, md ...string) call {
	t.Helper()
	ctx := metadata.AppendToOutgoingContext(context.Background(), md...)
	s, err := client.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return call{err: err}
	}
	var c call
	for {
		var msg *healthpb.HealthCheckResponse
		if msg, c.err = s.Recv(); c.err != nil {
			break
		}
		if msg.Status != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("Watch sent %v", msg.Status)
		}
	}
	if errors.Is(c.err, io.EOF) {
		c.err = nil
	}
	c.header, _ = s.Header()
	c.trailer = s.Trailer()
	return c
}

// failing is a secondary storage whose every call fails.
type failing struct{}

var errDown = errors.New("storage down")

func (failing) Get(context.Context, string) (string, bool, error)        { return "", false, errDown }
func (failing) Set(context.Context, string, string, time.Duration) error { return errDown }
func (failing) Delete(context.Context, string) error                     { return errDown }
func (failing) Increment(context.Context, string, int64, time.Duration) (driver.Counter, error) {
	return driver.Counter{}, errDown
}
