package metastore

import "context"

// Fence is a check run inside a write transaction, after fn and just
// before COMMIT, on the same connection: a non-nil error rolls the
// transaction back (definitely not committed). The cluster package
// installs one on a meta node's store that compares the node's leadership
// term with the term row of the store, reading it under a lock that a
// takeover must wait for, so that a superseded leader can never commit
// (invariants I1/I2: one writer of the version and of the catalog).
type Fence func(ctx context.Context, tx *Tx) error

// SetFence installs f (nil removes it). Every transaction of the store
// runs it (Tx, TxRetry, SnapshotTx, Migrate) except UnfencedTx.
func (d *DB) SetFence(f Fence) {
	if f == nil {
		d.fence.Store(nil)
		return
	}
	d.fence.Store(&f)
}

// UnfencedTx is Tx without the fence: for the lease and membership
// bookkeeping that decides who holds the leadership (a standby must be
// able to contend for it, and a node to heartbeat, without being the
// leader).
func (d *DB) UnfencedTx(ctx context.Context, fn func(tx *Tx) error) error {
	return d.runTx(ctx, 1, nil, true, fn)
}

func (d *DB) checkFence(ctx context.Context, tx *Tx) error {
	f := d.fence.Load()
	if f == nil {
		return nil
	}
	return (*f)(ctx, tx)
}
