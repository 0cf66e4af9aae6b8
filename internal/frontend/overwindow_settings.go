package frontend

// over_window_cache_policy chooses the window executors' partition cache
// for materialized views created afterwards in the session ("full" or
// "recent", see stream/exec.OverWindowCachePolicy); CREATE MATERIALIZED
// VIEW validates it and fixes it in the view's options for life.
// Registered here so that SET / SHOW / RESET accept it.
func init() {
	settingDefaults["over_window_cache_policy"] = "full"
}
