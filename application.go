package weir

import "github.com/weirhq/weir/internal/launch"

// A TaskManager of an application (WEIR_ROLE=taskmanager) takes its
// JobManager's arguments before main runs: started with any arguments (or
// none), it re-executes itself with the JobManager's, so that the
// program's own flag checks and job declaration see what the JobManager's
// saw (Config.Role, docs/deployment.md).
func init() { launch.AdoptApplicationArgs() }
