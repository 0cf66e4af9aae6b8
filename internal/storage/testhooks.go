package storage

// SetUnregisterHook installs fn, called by UnregisterTables with the tables
// it is about to remove, before the delta that removes them is written. It
// returns a function that removes it. Tests of a whole server use it to
// assert that nothing can still touch a table when it is purged (I3).
// Unset, it costs one atomic load per unregistration.
func (e *Engine) SetUnregisterHook(fn func(ids []TableID)) (remove func()) {
	e.unregisterHook.Store(&fn)
	return func() { e.unregisterHook.CompareAndSwap(&fn, nil) }
}

func (e *Engine) callUnregisterHook(ids []TableID) {
	if h := e.unregisterHook.Load(); h != nil {
		(*h)(ids)
	}
}

// SetMetaWriteHook installs fn as a MetaWrite hook (see Hooks) on a
// running engine, next to the one its Options name; it returns a function
// that removes it. Tests of a whole server use it to fail or pause a
// commit, or the re-read that resolves an ambiguous one (I2, I7).
func (e *Engine) SetMetaWriteHook(fn func(op string, after bool) error) (remove func()) {
	e.metaWriteHook.Store(&fn)
	return func() { e.metaWriteHook.CompareAndSwap(&fn, nil) }
}
