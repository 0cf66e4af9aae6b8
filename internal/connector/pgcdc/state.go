package pgcdc

import (
	"encoding/binary"
	"fmt"

	"github.com/jackc/pglogrepl"
)

// Phase is where a CDC table is in its life.
type Phase uint8

const (
	// PhaseSnapshot: the initial snapshot is being read. A table that
	// restarts in this phase starts the snapshot over with a new slot
	// (the exported snapshot died with the old connection).
	PhaseSnapshot Phase = 1
	// PhaseStream: the snapshot is stored; changes stream from LSN.
	PhaseStream Phase = 2
)

func (p Phase) String() string {
	switch p {
	case PhaseSnapshot:
		return "snapshot"
	case PhaseStream:
		return "streaming"
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// State is a CDC table's position, committed with the rows it produced
// (I8) and acknowledged to PostgreSQL only after that commit.
//
// Encoding (big-endian), version 1:
//
//	+---------+-------+--------------+-----------+
//	| 0x01    | phase | LSN (8 bytes) | slot name |
//	+---------+-------+--------------+-----------+
//
// LSN is, while snapshotting, the slot's consistent point; while
// streaming, the end of the last transaction whose every change was
// delivered with (or before) this state, or a keepalive's WAL position
// reached between transactions. Restarting the stream there repeats no
// committed transaction; a transaction cut by a barrier is replayed whole,
// which is harmless because CDC tables apply changes by primary key
// (upsert and delete are idempotent over a replayed prefix).
type State struct {
	Phase Phase
	LSN   pglogrepl.LSN
	Slot  string
}

const stateVersion = 1

// Encode returns the state's bytes.
func (s State) Encode() []byte {
	b := make([]byte, 10, 10+len(s.Slot))
	b[0] = stateVersion
	b[1] = byte(s.Phase)
	binary.BigEndian.PutUint64(b[2:], uint64(s.LSN))
	return append(b, s.Slot...)
}

// DecodeState parses Encode's bytes.
func DecodeState(b []byte) (State, error) {
	if len(b) < 10 || b[0] != stateVersion {
		return State{}, fmt.Errorf("pgcdc: bad state (%d bytes, version %d)", len(b), firstByte(b))
	}
	s := State{Phase: Phase(b[1]), LSN: pglogrepl.LSN(binary.BigEndian.Uint64(b[2:])), Slot: string(b[10:])}
	if s.Phase != PhaseSnapshot && s.Phase != PhaseStream {
		return State{}, fmt.Errorf("pgcdc: bad state phase %d", b[1])
	}
	return s, nil
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}

func (s State) String() string { return fmt.Sprintf("%s at %s (slot %s)", s.Phase, s.LSN, s.Slot) }
