package redistest_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	sluiceredis "github.com/sluice-go/sluice/adapters/redis"
	"github.com/sluice-go/sluice/adaptertest"
	"github.com/sluice-go/sluice/core/driver"
)

// TestProcesses races the Redis-backed limiter and storage-only API keys
// from four processes, each with its own client (adaptertest.RunProcesses).
func TestProcesses(t *testing.T) { adaptertest.RunProcesses(t, processTarget) }

func TestProcessChild(t *testing.T) { adaptertest.ProcessChild(t, processTarget) }

var processTarget = adaptertest.ProcessTarget{
	Name: "redis",
	Addr: adaptertest.RedisAddr,
	OpenStorage: func(_ context.Context, addr, prefix string) (driver.SecondaryStorage, func(), error) {
		c := redis.NewClient(&redis.Options{Addr: addr})
		s, err := sluiceredis.New(c, sluiceredis.WithPrefix(prefix))
		if err != nil {
			_ = c.Close()
			return nil, nil, err
		}
		return s, func() { _ = c.Close() }, nil
	},
	DropStorage: func(ctx context.Context, addr, prefix string) error {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		keys, err := c.Keys(ctx, prefix+"*").Result()
		if err != nil || len(keys) == 0 {
			return err
		}
		return c.Del(ctx, keys...).Err()
	},
}
