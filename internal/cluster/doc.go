// Package cluster keeps a Runnel cluster's coordination state in the
// metadata store: who leads the meta role, and which nodes are alive. It
// adds no consensus protocol of its own: PostgreSQL (or, for one machine,
// SQLite) row locks and transactions decide.
//
// # Meta leadership and fencing (invariants I1/I2: one writer)
//
// Two rows hold the leadership:
//
//	cluster_meta_term  (id=1, term, holder, since_ms)   changes only at a takeover
//	cluster_meta_lease (id=1, term, expires_ms)         renewed by the leader
//
// A node contending for leadership (Leader.TryAcquire) takes over when the
// lease has lapsed — or at once when forced, which `--role all` does: a
// single process claims the whole cluster — by raising the term by one and
// writing itself as holder, both rows locked. Terms are strictly
// increasing; a term is held by exactly one node, ever.
//
// Leader.Fence is installed on the leader's metastore (metastore.SetFence)
// and runs in every transaction that writes the catalog or the storage
// version, just before COMMIT: it reads the term row under a share lock
// (PostgreSQL SELECT … FOR SHARE; SQLite's write transactions are already
// exclusive) and refuses the commit with ErrFenced unless the term is
// still this node's. The lock orders every commit against every takeover:
// a takeover's FOR UPDATE waits for commits that already passed the
// check, and a commit that checks after a takeover sees the new term. So
// a leader paused anywhere (SIGSTOP, a long GC pause, a partition) past
// its lease, whose lease a standby then took over, can never commit again:
// safety rests on the term, never on clocks. Clocks (each node's own,
// compared with expires_ms) only decide when a standby may take over.
//
// A leader that learns it was superseded (a refused commit, or a renewal
// that finds another term) marks itself lost: Lost() is closed and Term()
// is 0, and the node steps down (a meta node goes back to standby; a
// single process stops serving) — it never crashes.
//
// The check holds the term row's share lock only from the check to COMMIT,
// and the lease and membership transactions lock their rows briefly. On
// PostgreSQL each of them also bounds its idle time to one lease
// (idle_in_transaction_session_timeout, set for the transaction only): a
// process stopped inside one has its session ended by the server, which
// releases the locks a takeover or a heartbeat waits for, and nothing of
// that transaction commits. SQLite (one machine) has no such bound: a
// process stopped inside a write transaction holds the database's lock.
//
// # Membership
//
// Every node registers a row in cluster_worker_node (Register: id, host,
// port from --advertise, roles, state, parallelism, started_at) and
// renews its lease there by heartbeats. The meta leader marks a running
// node whose lease lapsed as expired (ExpireLapsed, a fenced write); a
// node that finds itself expired at its next heartbeat registers again
// under a new id, so an id names one incarnation. Rows expired for longer
// than ExpiredRetention are deleted.
//
// This package imports only the metastore.
package cluster
