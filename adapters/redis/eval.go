package sluiceredis

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// script is a Lua script this storage runs on one key by its SHA1.
type script struct {
	src, sha string
	// The hash and source as command arguments, boxed once: a string put
	// in an interface at each call is an allocation per decision.
	shaArg, srcArg any
}

func newScript(src string) *script {
	sha := redis.NewScript(src).Hash()
	return &script{src: src, sha: sha, shaArg: sha, srcArg: src}
}

// evalInts runs sc on key with args and returns its reply, an array of
// integers, read into an IntSliceCmd: integers straight into one []int64,
// where redis.Script's Run and Int64Slice box every integer in an
// interface and copy them into a second slice (one allocation for the
// reply where Run takes five).
func (s *Storage) evalInts(ctx context.Context, sc *script, key string, args ...any) ([]int64, error) {
	cmd, err := evalCmd(ctx, s, sc, redis.NewIntSliceCmd, key, args...)
	if err != nil {
		return nil, err
	}
	return cmd.Val(), nil
}

// evalInt runs sc on key with args and returns its reply, one integer,
// read into an IntCmd: no allocation for the reply.
func (s *Storage) evalInt(ctx context.Context, sc *script, key string, args ...any) (int64, error) {
	cmd, err := evalCmd(ctx, s, sc, redis.NewIntCmd, key, args...)
	if err != nil {
		return 0, err
	}
	return cmd.Val(), nil
}

// evalCmd runs sc on key with args into a command made by mk: one
// EVALSHA per call, the script loaded once. A server that does not know
// the script (a new or restarted server, SCRIPT FLUSH) answers NOSCRIPT;
// the call is then sent once as EVAL, which loads it, and the next call is
// an EVALSHA again. On Redis Cluster the command is routed by key, its
// only key. After an error the command is not read: after a context's end
// it may still be answered by the batch it was queued in (see pipe).
func evalCmd[C redis.Cmder](ctx context.Context, s *Storage, sc *script, mk func(context.Context, ...any) C, key string, args ...any) (C, error) {
	a := make([]any, 4, 4+len(args))
	a[0], a[1], a[2], a[3] = "evalsha", sc.shaArg, 1, key
	a = append(a, args...)
	cmd := mk(ctx, a...)
	err := s.pipe.process(ctx, s.client, cmd)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		a[0], a[1] = "eval", sc.srcArg
		cmd = mk(ctx, a...)
		err = s.pipe.process(ctx, s.client, cmd)
	}
	return cmd, err
}
