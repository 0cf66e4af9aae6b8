package stream

import (
	"bytes"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
)

// What each actor is waiting on (issue 17 item 4, RisingWave's
// await-tree): the chain of calls each of the actor's goroutines is in
// right now, read from the Go runtime's goroutine profile, where every
// actor goroutine (and every goroutine it starts) carries the pprof label
// runnel_actor=<id>. Nothing is recorded on the hot path: the chain is
// read only when asked for (rw_actors, the dashboard's actors page), at
// the price of one goroutine profile per request. For an actor blocked in
// a call, its innermost frame says on what (stream.Receive: its input
// channel; an object store read; a lock), and the frames above say which
// executor of the chain made the call.

// AwaitTree renders what the actor's goroutines are doing now, one chain
// per goroutine ("; " between them), outermost call first, executors
// and Runnel's functions only:
//
//	exec.(*Materialize).Next → exec.(*HashAgg).Next → stream.Receive (actorstate.go:183)
//
// An actor without a goroutine (exited) has none ("").
type AwaitTree = string

// maxAwaitFrames bounds the frames of one chain (the middle is elided).
const maxAwaitFrames = 12

// moduleFuncPrefix is stripped from function names.
const moduleFuncPrefix = "github.com/runneldb/runnel/internal/"

// AwaitTrees returns the await tree of every running actor, by id.
func (m *BarrierManager) AwaitTrees() map[ActorID]AwaitTree {
	m.mu.Lock()
	ids := make(map[string]ActorID, len(m.actors))
	for id := range m.actors {
		ids[formatActorID(id)] = id
	}
	m.mu.Unlock()
	out := make(map[ActorID]AwaitTree, len(ids))
	for label, recs := range actorGoroutines() {
		id, ok := ids[label]
		if !ok {
			continue
		}
		var chains []string
		for _, rec := range recs {
			c, isRun := awaitChain(rec)
			switch {
			case c == "":
			case isRun: // the actor's own goroutine first
				chains = append([]string{c}, chains...)
			default:
				chains = append(chains, c)
			}
		}
		out[id] = strings.Join(chains, "; ")
	}
	return out
}

// ActorsWithAwaitTrees is Actors with each actor's AwaitTree filled in.
func (m *BarrierManager) ActorsWithAwaitTrees() []ActorInfo {
	actors := m.Actors()
	trees := m.AwaitTrees()
	for i := range actors {
		actors[i].WaitingOn = trees[actors[i].ID]
	}
	return actors
}

// awaitChain renders one goroutine record of the profile (debug level 1:
// a header line, a "# labels:" line, then one "#\t<pc>\t<func>+<off>\t<file>:<line>"
// line per frame, innermost first) as the chain of Runnel frames below
// Actor.Run, outermost first, with the innermost frame's file and line;
// isRun reports whether the goroutine is the one running Actor.Run.
func awaitChain(rec string) (chain string, isRun bool) {
	var frames []string
	var innermostAt string
	for _, line := range strings.Split(rec, "\n") {
		f := strings.Split(strings.TrimPrefix(line, "#\t"), "\t")
		if !strings.HasPrefix(line, "#\t") || len(f) < 3 {
			continue
		}
		fn, _, _ := strings.Cut(f[1], "+")
		if strings.HasSuffix(fn, "stream.(*Actor).Run") {
			isRun = true
			break // the actor's scaffolding is below
		}
		name, ok := strings.CutPrefix(fn, moduleFuncPrefix)
		if !ok {
			if len(frames) == 0 && innermostAt == "" && !strings.HasPrefix(fn, "runtime") {
				// A call into a library (a driver, the SST reader) is
				// what the actor waits on; keep its name.
				frames = append(frames, fn)
				innermostAt = fileLine(f[len(f)-1])
			}
			continue
		}
		if i := strings.LastIndex(name, "/"); i >= 0 {
			name = name[i+1:]
		}
		if len(frames) == 0 {
			innermostAt = fileLine(f[len(f)-1])
		}
		frames = append(frames, name)
	}
	if len(frames) == 0 {
		return "", isRun
	}
	if innermostAt != "" {
		frames[0] += " (" + innermostAt + ")"
	}
	slices.Reverse(frames)
	if len(frames) > maxAwaitFrames {
		frames = append(append(frames[:maxAwaitFrames/2:maxAwaitFrames/2], "…"), frames[len(frames)-maxAwaitFrames/2:]...)
	}
	return strings.Join(frames, " → "), isRun
}

func formatActorID(id ActorID) string { return strconv.FormatUint(uint64(id), 10) }

// fileLine shortens "/path/to/file.go:123" to "file.go:123".
func fileLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "/"); i >= 0 {
		return s[i+1:]
	}
	return s
}

// actorGoroutines returns the goroutine profile's records (debug level
// 1: records separated by blank lines, each with a "# labels:" line) of
// goroutines labelled with an actor id, by id.
func actorGoroutines() map[string][]string {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return nil
	}
	out := map[string][]string{}
	for _, rec := range strings.Split(buf.String(), "\n\n") {
		i := strings.Index(rec, `"`+actorLabel+`":"`)
		if i < 0 {
			continue
		}
		rest := rec[i+len(actorLabel)+4:]
		id, _, _ := strings.Cut(rest, `"`)
		out[id] = append(out[id], rec)
	}
	return out
}
