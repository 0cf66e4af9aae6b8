package sink

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// CrashPointEnv names the crash point at which a test wants the process
// SIGKILLed (internal/crashtest: the sink points below, and the DDL points
// of internal/server, which reads the same variable). Read once at start.
const CrashPointEnv = "RUNNEL_TEST_CRASH_POINT"

var crashPointName = os.Getenv(CrashPointEnv)

// Crash points of delivery, in the order an epoch passes them:
//
//	sink/before-commit         every change of the epoch handed to the
//	                           target's Txn (a Kafka transaction holds its
//	                           records, a PostgreSQL transaction its rows),
//	                           Commit not called
//	sink-kafka/before-end-txn  (is_exactly_once) the epoch's offset is
//	                           staged in the Kafka transaction, which is
//	                           not committed
//	sink/after-commit          the target committed the epoch; its log
//	                           rows are not released for truncation
//
// A kill at any of them must leave the target holding every epoch once
// after the restart (I8; I7 end to end).
const (
	PointBeforeCommit = "sink/before-commit"
	PointAfterCommit  = "sink/after-commit"
)

// CrashPoint kills the process with SIGKILL when RUNNEL_TEST_CRASH_POINT
// names point, alone or as point@sink, where sink is the sink's name with
// or without its database.schema. prefix. Unset, it is one comparison.
func CrashPoint(point, sink string) {
	if crashPointName == "" || !strings.HasPrefix(crashPointName, point) {
		return
	}
	if rest := crashPointName[len(point):]; rest != "" {
		name, ok := strings.CutPrefix(rest, "@")
		short := sink[strings.LastIndexByte(sink, '.')+1:]
		if !ok || name != sink && name != short {
			return
		}
	}
	fmt.Fprintf(os.Stderr, "runnel: test crash point %s reached: SIGKILL\n", crashPointName)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal ends the process
}
