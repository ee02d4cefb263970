package sluiceredis

import (
	"context"
	"fmt"

	"github.com/sluice-go/sluice/core/driver"
)

// AddToSet adds member to the Redis set at set (SADD), implementing
// keystore.Indexer; adding twice is a no-op.
func (s *Storage) AddToSet(ctx context.Context, set, member string) error {
	driver.AddRoundTrips(ctx, 1)
	if err := s.client.SAdd(ctx, s.prefix+set, member).Err(); err != nil {
		return fmt.Errorf("sluiceredis: add to set: %w", err)
	}
	return nil
}

// RemoveFromSet removes member from the set (SREM); a missing member is not
// an error.
func (s *Storage) RemoveFromSet(ctx context.Context, set, member string) error {
	driver.AddRoundTrips(ctx, 1)
	if err := s.client.SRem(ctx, s.prefix+set, member).Err(); err != nil {
		return fmt.Errorf("sluiceredis: remove from set: %w", err)
	}
	return nil
}

// SetMembers returns the members of the set (SMEMBERS), in any order.
func (s *Storage) SetMembers(ctx context.Context, set string) ([]string, error) {
	driver.AddRoundTrips(ctx, 1)
	m, err := s.client.SMembers(ctx, s.prefix+set).Result()
	if err != nil {
		return nil, fmt.Errorf("sluiceredis: set members: %w", err)
	}
	return m, nil
}
