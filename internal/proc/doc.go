// Package proc runs a child process as the leader of its own process group
// and ends it as a whole. It is what the go-plugin host and the keeper of
// a foreign server share: the attributes that put a child in its own
// group and, when it must not outlive its parent, tie it to it (forked
// from one locked thread, see StartOnForkThread); the reaping that takes
// what the child left in its group with it; the bounded reading of a
// child's output lines; and a handle on a process that is not a child
// (Open), which names it for good; and a process's SIGPIPE, so that a
// log reader that exits takes nothing with it (SurviveBrokenPipes).
//
// All of it is Linux's but ReadStat, Alive, Matching and
// SurviveBrokenPipes, which build everywhere (and find no /proc
// elsewhere), so that the room SDK builds wherever its authors work.
package proc
