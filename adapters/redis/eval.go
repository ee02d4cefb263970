package sluiceredis

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// script is a Lua script this storage runs on one key by its SHA1.
type script struct {
	src, sha string
}

func newScript(src string) *script {
	return &script{src: src, sha: redis.NewScript(src).Hash()}
}

// evalInts runs sc on key with args and returns its reply, an array of
// integers: one EVALSHA per call, the script loaded once. A server that
// does not know the script (a new or restarted server, SCRIPT FLUSH)
// answers NOSCRIPT; the call is then sent once as EVAL, which loads it,
// and the next call is an EVALSHA again. On Redis Cluster the command is
// routed by key, its only key.
//
// It reads the reply into an IntSliceCmd, integers straight into one
// []int64, where redis.Script's Run and Int64Slice box every integer in
// an interface and copy them into a second slice: per decision, one
// allocation for the reply where Run takes five (three boxed values, the
// []any, the []int64).
func (s *Storage) evalInts(ctx context.Context, sc *script, key string, args ...any) ([]int64, error) {
	a := make([]any, 4, 4+len(args))
	a[0], a[1], a[2], a[3] = "evalsha", sc.sha, 1, key
	a = append(a, args...)
	cmd := redis.NewIntSliceCmd(ctx, a...)
	err := s.pipe.process(ctx, s.client, cmd)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		a[0], a[1] = "eval", sc.src
		cmd = redis.NewIntSliceCmd(ctx, a...)
		err = s.pipe.process(ctx, s.client, cmd)
	}
	if err != nil {
		// After a context's end the command may still be answered by the
		// batch it was queued in (see pipe): it is not read.
		return nil, err
	}
	return cmd.Val(), nil
}
