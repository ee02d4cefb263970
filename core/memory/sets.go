package memory

import "context"

// AddToSet adds member to the unordered set named set, creating it; adding
// twice is a no-op. Sets never expire; with RemoveFromSet and SetMembers
// they make the storage a keystore.Indexer, which storage-only API keys
// list by owner with.
func (s *Storage) AddToSet(ctx context.Context, set, member string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.setsMu.Lock()
	defer s.setsMu.Unlock()
	if s.sets[set] == nil {
		s.sets[set] = map[string]struct{}{}
	}
	s.sets[set][member] = struct{}{}
	return nil
}

// RemoveFromSet removes member from set; a missing member is not an error.
func (s *Storage) RemoveFromSet(ctx context.Context, set, member string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.setsMu.Lock()
	defer s.setsMu.Unlock()
	delete(s.sets[set], member)
	if len(s.sets[set]) == 0 {
		delete(s.sets, set)
	}
	return nil
}

// SetMembers returns the members of set, in no particular order.
func (s *Storage) SetMembers(ctx context.Context, set string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.setsMu.Lock()
	defer s.setsMu.Unlock()
	out := make([]string, 0, len(s.sets[set]))
	for m := range s.sets[set] {
		out = append(out, m)
	}
	return out, nil
}
