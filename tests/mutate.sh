#!/bin/sh
# mutate.sh puts each deliberate bug listed below into a copy of the tree,
# one at a time, and runs the tests that guard it: each bug must make them
# fail. First the same tests run on the copy as it is, and must pass. The
# tree itself is never edited: the copy, and the tests' temporary files,
# are removed when the script ends, interrupted or not. `make mutate`
# runs it with FOYER_TEST_ALL=1, so that a guard whose requirement is
# missing fails instead of skipping.
set -eu

GO=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
copy=$(mktemp -d "${TMPDIR:-/tmp}/foyer-mutate.XXXXXX")
# The tests' temporary files go in a directory of the run's own, removed
# with the copy: a bug that crashes a test binary leaves its files there,
# not in the machine's temporary directory. Its name is short, for the
# rooms' sockets beneath it, and rooms run as users of their own may pass
# through it as through /tmp.
tmp=
trap 'rm -rf "$copy" ${tmp:+"$tmp"}' EXIT
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fm.XXXXXX")
chmod 1777 "$tmp"
export TMPDIR="$tmp"
trap 'exit 130' INT TERM HUP

# The files git knows, as they are in the work tree (uncommitted edits
# included), and nothing else.
(cd "$root" && git ls-files -z --cached --others --exclude-standard |
	tar --null --ignore-failed-read -T - -cf -) | tar -C "$copy" -xf -
cd "$copy"

# Each bug: the file, the line it changes (found exactly once), the line
# as broken, the packages whose tests guard it, and those tests (-run).
bugs() {
	# A JOIN forwarded to the room's owner loses its seat proof.
	bug cluster/place.go \
		'req, _ := json.Marshal(jr) // plain values: cannot fail' \
		'jr.Proof = room.Unproven; req, _ := json.Marshal(jr)' \
		./cluster '^TestTableContract$'
	# A quick join gives up at the first room whose host does not answer.
	bug cluster/place.go \
		'if err == nil || err == room.ErrQuota || ctx.Err() != nil {' \
		'if err == nil || err == room.ErrQuota || ctx.Err() == nil {' \
		./cluster '^TestQuickJoinGoesOnPastASilentHost$'
	# A room placed on a host at another address is answered without it:
	# its creator is sent to this host's address.
	bug cluster/view.go \
		'if h := v.hosts[host]; h != nil {' \
		'if h := v.hosts[host]; h == nil {' \
		./cluster '^TestViewPlacedRooms$'
	# A host that takes another range of ids keeps its old one from
	# every other host.
	bug cluster/view.go \
		'if v.ranges[h.rec.Range] == name {' \
		'if v.ranges[h.rec.Range] != name {' \
		./cluster '^TestViewHeartbeats$'
	# Rooms deleted while the watch was down stay listed once it is back.
	bug cluster/view.go \
		'v.gen++' \
		'v.gen--' \
		./cluster '^TestViewReplay$'
	# Rooms run as their users share a group.
	bug internal/roomuser/roomuser.go \
		'return &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}' \
		'return &syscall.Credential{Uid: uint32(uid), Gid: 65534, Groups: []uint32{}}' \
		./tests '^TestContainRoomHasNoAuthority$'
	# The descriptor a room's first process was executed through reaches
	# the foreign server its keeper starts.
	bug cmd/internal/roomcmd/roomcmd.go \
		'if err := proc.CloseOnExecFrom(roomuser.ProgramFD); err != nil {' \
		'if err := proc.CloseOnExecFrom(roomuser.ProgramFD + 1); err != nil {' \
		./tests '^TestContainRoomHasNoAuthority$'
	# A room's warden ends nothing: the cgroups of a room whose lobby was
	# killed stay behind.
	bug internal/roomuser/roomuser.go \
		'return cgroup.End(ctx, tree, room)' \
		'return cgroup.End(ctx, tree+"x", room)' \
		./tests '^TestEscapeeDiesWithItsRoom$'
	# A room whose warden could not start is handed out all the same.
	bug supervisor/spawn.go \
		'err = w.started() // nil if early: launched by boot' \
		'_ = w.started()' \
		./supervisor '^TestNoRoomWithoutItsWarden$'
	# A room handed out while its instance started keeps playing when
	# its warden cannot start.
	bug supervisor/spawn.go \
		'if err = w.started(); err != nil {' \
		'if err = w.started(); err == nil {' \
		./supervisor '^TestRoomHandedOutEarlyEndsWithoutItsWarden$'
	# Rooms are handed out while their instance starts even when their
	# program has never started, or last failed to: every CREATE of a
	# broken program gets a room that vanishes.
	bug supervisor/supervisor.go \
		'early := !warm && s.proven && s.cfg.StateDir == ""' \
		'early := !warm && s.cfg.StateDir == ""' \
		./supervisor '^TestRoomWhoseInstanceFailsToStartIsReaped$'
	# The SDK binds the room's port itself, though the host holds it
	# and passed it: the room cannot start.
	bug instance/serve.go \
		'if conn != nil && !boundOn(conn, a) {' \
		'if conn != nil {' \
		./supervisor '^TestRoomIsHandedOutWhileItsInstanceStarts$'
	# A room stopped while its instance started counts as a program that
	# cannot start: the next creates wait, and the failure is logged.
	bug supervisor/spawn.go \
		'stopped := r.cause != "" // stopped while it started: no fault of its program' \
		'stopped := false' \
		./supervisor '^TestRoomStoppedWhileItsInstanceStarts$'
	# A room still starting is held to health_timeout and killed silent.
	bug supervisor/supervisor.go \
		'case r.cause != "" || s.released || r.booting: // a start has its own deadline' \
		'case r.cause != "" || s.released:' \
		./supervisor '^TestRoomStartingPastHealthTimeoutLives$'
	# A Runner keeps the socket its host passed: its program cannot bind.
	bug instance/serve.go \
		'if s.runner != nil && s.inherited != nil {' \
		'if false {' \
		./supervisor '^TestRunnerLetsItsProgramBindThePort$'
	# A start under way is timed when the room is handed out, and again
	# when it is ready.
	bug supervisor/supervisor.go \
		'if !r.booting { // a start still under way is counted once over (boot)' \
		'if true {' \
		./supervisor '^TestRoomIsHandedOutWhileItsInstanceStarts$'
	# Stop talks to an instance still starting: there is nobody to talk
	# to yet.
	bug supervisor/host/host.go \
		'if p.await(ctx) == nil {' \
		'if true {' \
		./supervisor '^TestRoomStoppedWhileItsInstanceStarts$'
	# A room handed out while its instance started never gets the seats
	# it was given meanwhile: its door keeps its creator out.
	bug supervisor/spawn.go \
		's.remember(r.row.ID, time.Time{}) // the seats it was given while it started' \
		'_ = r.row.ID' \
		./supervisor '^TestRoomIsHandedOutWhileItsInstanceStarts$'
	# A room's first process keeps root's identity.
	bug internal/roomuser/roomuser.go \
		'cmd.SysProcAttr.Credential = credential(uid)' \
		'_ = credential(uid)' \
		./tests '^TestContainRoomHasNoAuthority$'
	# A room's program is executed by its path, which the room's user may
	# not reach (the tests' binaries are in a directory of root's alone).
	bug internal/roomuser/roomuser.go \
		'cmd.Path = "/proc/self/fd/" + strconv.Itoa(ProgramFD)' \
		'_ = strconv.Itoa(ProgramFD)' \
		./tests '^TestContainRoomHasNoAuthority$'
	# A launch that failed names the descriptor its program ran through.
	bug supervisor/host/host.go \
		'return cmd.Args[0]' \
		'return cmd.Path' \
		./supervisor '^TestRoomUsersLaunchNamesItsProgram$'
	# Rooms still starting are not counted against max_instances:
	# CREATEs at once start more rooms than it allows.
	bug supervisor/supervisor.go \
		'if n := s.processes() + s.spawning; n >= s.cfg.MaxInstances {' \
		'if n := s.processes() - s.spawning; n >= s.cfg.MaxInstances {' \
		./supervisor '^TestCapacity$'
	# max_lifetime 0, no limit, ends every room at the first sweep.
	bug supervisor/supervisor.go \
		'case s.cfg.MaxLifetime > 0 && !r.handedOut.IsZero()' \
		'case s.cfg.MaxLifetime >= 0 && !r.handedOut.IsZero()' \
		./supervisor '^TestNothingEndsBeforeItsTime$'
	# The handover's freeze does nothing: CREATE and JOIN reach the
	# table the handover holds, and are refused.
	bug lobby/lobby.go \
		'func (l *Lobby) Freeze() { l.frozen.Store(true) }' \
		'func (l *Lobby) Freeze() {}' \
		'./lobby ./tests' '^(TestFreezeDropsCreateAndJoinUntilThaw|TestFreezeDropsTheRequestsItCaughtRunning|TestUpgradeUnderCreateAndJoinLoad)$'
	# A CREATE or JOIN caught running by the freeze is refused, not
	# dropped for its retry.
	bug lobby/lobby.go \
		'return errors.Is(err, room.ErrClosed) && l.frozen.Load()' \
		'return errors.Is(err, room.ErrClosed) && l.frozen.Load() && false' \
		./lobby '^(TestFreezeDropsTheRequestsItCaughtRunning|TestFreezeDropsAJoinCaughtOnTheReadLoop|TestFreezeDropsAnExtensionJoinItCaught)$'
	# An extension request a worker ran (CREATE, QUICK, a JOIN that may
	# wait or has a password) and the freeze caught is refused, not
	# dropped for its retry.
	bug lobby/extended.go \
		'if l.handedOver(l.extRetries, req.key, err) {' \
		'if l.handedOver(l.extRetries, req.key, err) && false {' \
		./lobby '^(TestFreezeDropsAnExtensionCreateItCaught|TestFreezeDropsAnExtensionJoinItCaught)$'
	# A CREATE's slot never comes back: once MaxCreates CREATEs have
	# run, every CREATE is dropped as busy.
	bug lobby/lobby.go \
		'defer l.creating.Add(-1)' \
		'defer l.creating.Add(1)' \
		./lobby '^TestCreateSlotsComeBack$'
	# Answered probes no longer count as a server's signs of life.
	bug supervisor/supervisor.go \
		'if st.Details != nil || !r.probed {' \
		'if !r.probed {' \
		./supervisor '^TestExecDDNetAnsweredProbesKeepItAlive$'
	# The source table grows past max_sources.
	bug internal/bounded/bounded.go \
		'if len(t.slots) < t.max {' \
		'if len(t.slots) < 2*t.max {' \
		./tests '^TestForgedMillionSourcesMeetTheBounds$'
	# At finds an entry in a slot another key has taken since: the retry
	# cache records a reply in the wrong endpoint's answers.
	bug internal/bounded/bounded.go \
		'if i < 0 || i >= len(t.slots) || t.slots[i].key != k {' \
		'if i < 0 || i >= len(t.slots) {' \
		./lobby '^TestRetriesMatchAModel$'
	# A short frame's CRC takes two bytes of its eight-byte step in the
	# wrong order.
	bug packet/crc.go \
		't[3][b[4]] ^ t[2][b[5]] ^ t[1][b[6]] ^ t[0][b[7]]' \
		't[3][b[5]] ^ t[2][b[4]] ^ t[1][b[6]] ^ t[0][b[7]]' \
		./packet '^TestChecksumIsIEEE$'
	# Its four-byte step takes its word in the wrong byte order.
	bug packet/crc.go \
		'c = t[3][byte(c)] ^ t[2][byte(c>>8)] ^ t[1][byte(c>>16)] ^ t[0][c>>24]' \
		'c = t[0][byte(c)] ^ t[1][byte(c>>8)] ^ t[2][byte(c>>16)] ^ t[3][c>>24]' \
		./packet '^TestChecksumIsIEEE$'
	# A room's row does not count the seats held in it: JoinAt says the
	# places taken without its own seat.
	bug room/roomtable/roomtable.go \
		'e.row.Seats = e.seats.len()' \
		'_ = e.seats.len()' \
		./room/roomtable '^TestJoinAtSaysWhatTheTableLists$'
	# A read loop counts its batch's requests only after their replies
	# have gone out.
	bug lobby/lobby.go \
		'l.stats.add(&q.counts) // requests and joins, before their replies' \
		'// counted with the replies' \
		./lobby '^TestBatchCountedBeforeItsRepliesGoOut$'
	# UnmarshalRequest leaves what the Message held before.
	bug packet/message.go \
		'*m = Message{}' \
		'_ = m' \
		./packet '^TestUnmarshalRequestOverwrites$'
	# JoinAt holds the seat from the table's clock, not from its time.
	bug room/roomtable/roomtable.go \
		'if _, err := t.hold(e, player, proof, now); err != nil {' \
		'if _, err := t.hold(e, player, proof, time.Now()); err != nil {' \
		./room/roomtable '^TestJoinAtHoldsFromItsTime$'
	# The table's seat lines that its queue has no room for are dropped
	# and never counted.
	bug room/roomtable/roomtable.go \
		't.seatLinesDropped.Add(1)' \
		'_ = 0' \
		./room/roomtable '^TestStalledLogWriterNeverHoldsTheTable$'
	# A client's requests all take the same place in the retry cache:
	# only its latest is remembered.
	bug lobby/retry.go \
		'e.next = uint8((j + 1) % r.ways)' \
		'e.next = uint8(j)' \
		./lobby '^TestRetriesMatchAModel$'
	# The table writes a seat's debug line under its lock: a stalled log
	# writer stalls every JOIN.
	bug room/roomtable/roomtable.go \
		'if t.seatLines != nil {' \
		'if t.log.Debug().Msg("room joined"); t.seatLines != nil {' \
		./room/roomtable '^TestStalledLogWriterNeverHoldsTheTable$'
	# An extension request sent again is run again, not answered from
	# the cache.
	bug lobby/extended.go \
		'if out, found := l.extRetries.begin(req.key, now, out); found {' \
		'if out, found := l.extRetries.begin(req.key, now, out); found && len(out) < 0 {' \
		./lobby '^TestExtRetryAnsweredFromTheCache$'
	# A JOIN sent again is run again on its read loop, not answered
	# from the cache.
	bug lobby/lobby.go \
		'case found:' \
		'case found && len(out) < 0:' \
		./lobby '^TestExtRetryAnsweredFromTheCache$'
	# A read loop's look at its socket's drop count allocates, every
	# millisecond under load.
	bug internal/sockfilter/attach_linux.go \
		'if err := m.rc.Control(m.get); err != nil {' \
		'if err := m.rc.Control(func(fd uintptr) { m.meminfo(fd) }); err != nil {' \
		./internal/sockfilter '^TestKernelAgreesWithPasses$'
	# A JOIN run on the read loop that was dropped, not answered, leaves
	# the answer it was refused in the retry cache: its retry gets that
	# refusal.
	bug lobby/retry.go \
		'if keep {' \
		'if keep || true {' \
		./lobby '^(TestRetriesMatchAModel|TestFreezeDropsAJoinCaughtOnTheReadLoop|TestFreezeDropsAnExtensionJoinItCaught)$'
	# The answers of an endpoint the retry cache evicts are still
	# counted: the cache's bound is not kept.
	bug lobby/retry.go \
		'*e = answers{replies: e.replies}' \
		'*e = answers{replies: e.replies}; r.n += perEndpoint' \
		./lobby '^TestRetriesKeepActiveEndpointsThroughAFlood$'
	# A batch's replies to a network that do not fit together are all
	# dropped, even those that fit alone.
	bug lobby/batch.go \
		'drop[j] = !together && (n == 1 || !allow(rs[j].to.Addr(), len(rs[j].b)))' \
		'drop[j] = !together' \
		./lobby '^TestSettleChargesANetworkOnce$'
	# A run counts a JOIN the frozen lobby turns away before the guard:
	# the requests after it are refused as if it had taken a token.
	bug lobby/lobby.go \
		'return (t == packet.ListRooms || t == packet.JoinRoom) && l.turnedAway(t) == "" && packet.Is(b)' \
		'return (t == packet.ListRooms || t == packet.JoinRoom) && packet.Is(b)' \
		./lobby '^TestBatchAnswersAsOneByOne$'
	# A test's UDP read takes another address's datagram for its peer's.
	bug internal/udptest/udptest.go \
		'if netip.AddrPortFrom(src.Addr().Unmap(), src.Port()) == from {' \
		'if src.IsValid() {' \
		./internal/udptest '^TestReadTakesOnlyItsPeer$'
	# A CREATE asks with the LISTs after it in its batch: a new source's
	# first CREATE is no longer charged as unverified.
	bug lobby/lobby.go \
		'if !batched || create {' \
		'if !batched {' \
		./lobby '^TestBatchAnswersAsOneByOne$'
	# A run of a source's requests goes on past a datagram of it that
	# is not alike, taking tokens for requests that ask alone.
	bug lobby/batch.go \
		'if !alike(s.buf[:s.n]) {' \
		'if false && !alike(s.buf[:s.n]) {' \
		./lobby '^TestBatchAdmitsARunAtOnce$'
	# Every refusal in a run is a new limited episode.
	bug lobby/batch.go \
		'c.refused = limit.Limited // as its source is now' \
		'c.refused = limit.NewlyLimited' \
		./lobby '^TestBatchAnswersAsOneByOne$'
	# Requests asked for together are served only as many as the bucket
	# shows whole tokens for, where in turn it serves one more.
	bug internal/limit/limit.go \
		'if k := min(n, t+1); k > 0 && lim.AllowN(now, k) {' \
		'if k := min(n, t); k > 0 && lim.AllowN(now, k) {' \
		./internal/limit '^TestAllowNIsAllowInTurn$'
	# Replies to unverified sources queued in a batch are charged to
	# the network budget only.
	bug lobby/lobby.go \
		'if queued && v == limit.Served {' \
		'if queued {' \
		./tests '^TestForgedMillionSourcesMeetTheBounds$'
	# The supervisor binds a room's port at every address, whatever
	# bind says.
	bug supervisor/spawn.go \
		'c, err := udpsock.Listen(s.cfg.Bind, port)' \
		'c, err := udpsock.Listen(instance.Assignment{}.Bind, port)' \
		./supervisor '^TestRoomSocketBoundAtBind$'
	# Replies to unverified sources are not charged to
	# unverified_reply_limit.
	bug internal/limit/guard.go \
		'ok := g.unverified.AllowN(g.clock.at(now), n)' \
		'ok := g.unverified.AllowN(g.clock.at(now), 0)' \
		./tests '^TestForgedMillionSourcesMeetTheBounds$'
	# A budget handed a time before its last credits the gap again.
	bug internal/limit/limit.go \
		'return m.last' \
		'return now' \
		./internal/limit '^TestBudgetsHoldWhenClocksArriveOutOfOrder$'
	# A denied network inside another, ending before it, shrinks the
	# other.
	bug internal/limit/guard.go \
		'if compare16(r.hi, merged[n-1].hi) > 0 {' \
		'if compare16(r.hi, merged[n-1].hi) <= 0 {' \
		./internal/limit '^TestGuardDenyList$'
	# The room table keeps a count for every network that ever created
	# a room.
	bug room/roomtable/roomtable.go \
		'if t.nets[net]--; t.nets[net] <= 0 {' \
		'if t.nets[net]--; t.nets[net] < 0 {' \
		./room/roomtable '^TestNetworkForgottenWithItsLastRoom$'
	# A room's door hands on a knock however long ago it came.
	bug instance/door.go \
		'if _, ok := held[k.from.Addr()]; ok && now.Sub(k.at) < knockTTL {' \
		'if _, ok := held[k.from.Addr()]; ok {' \
		./instance '^TestDoorHandsOnAKnockItsSeatCaughtUpWith$'
	# With the socket filter on, any move of the kernel's drop count is
	# taken for a flood, the filter's own drops too.
	bug lobby/filter.go \
		'func (l *Lobby) flooded(n int) bool { return !l.cfg.Filter || n == batchSize }' \
		'func (l *Lobby) flooded(n int) bool { return true }' \
		./lobby '^TestKernelFilterDropsBeforeTheLoop$'
	# With the socket filter on, a receive buffer that ran over is never
	# taken for a flood.
	bug lobby/filter.go \
		'func (l *Lobby) flooded(n int) bool { return !l.cfg.Filter || n == batchSize }' \
		'func (l *Lobby) flooded(n int) bool { return !l.cfg.Filter }' \
		./lobby '^TestOverflowIsAFloodWithTheFilter$'
	# A batch read takes as many datagrams as it has slots, whatever the
	# count asked for.
	bug internal/mmsg/mmsg.go \
		'k := min(n, len(b.h))' \
		'k := len(b.h); _ = n' \
		./internal/mmsg '^TestBatchRoundTrip$'
	# The read loops never give their processors up when they take every
	# one.
	bug internal/mmsg/mmsg.go \
		'func Yields(callers int) bool { return callers >= runtime.GOMAXPROCS(0) }' \
		'func Yields(callers int) bool { return callers > runtime.GOMAXPROCS(0) }' \
		./lobby '^TestReadersYieldWithNoProcessorToSpare$'
	# The lobby counts the loops of one listen address only.
	bug lobby/lobby.go \
		'func (l *Lobby) readLoops() int { return len(l.conns) }' \
		'func (l *Lobby) readLoops() int { return len(l.conns) / len(l.addrs) }' \
		./lobby '^TestReadersYieldWithNoProcessorToSpare$'
	# A batch keeps the yielding choice of its first call when GOMAXPROCS
	# changes.
	bug internal/mmsg/mmsg.go \
		'if b.calls%rawRecheck == 0 {' \
		'if b.calls == 0 {' \
		./internal/mmsg '^TestYieldFollowsGOMAXPROCS$'
	# A caller that takes every processor says it yields but never does.
	bug internal/mmsg/mmsg.go \
		'		runtime.Gosched()' \
		'		_ = 0' \
		./internal/mmsg '^TestYieldLetsTheReadyRun$'
	# A patched CRC is carried over one zero byte too few.
	bug packet/crc.go \
		'return old ^ carry(c, n-off-len(d))' \
		'return old ^ carry(c, n-off-len(d)+1)' \
		./packet '^TestChangedChecksumIsComputedAnew$'
	# A CRC is carried over a long run of zero bytes only as far as the
	# tables reach.
	bug packet/crc.go \
		'for ; z >= 2*longest; z -= longest {' \
		'for ; z >= 4*longest; z -= longest {' \
		./packet '^TestChangedChecksumIsComputedAnew$'
	# A legacy reply is given its request's sequence but not its tick.
	bug packet/frame.go \
		'		k = 6' \
		'		k = 2' \
		./packet '^TestSetSeqTick$'
	# The room SDK stops building off Linux: package proc's process
	# control is no longer Linux's alone.
	bug internal/proc/handle.go \
		'//go:build linux' \
		'// built everywhere' \
		./tests '^TestClientSideAndRoomSDKBuildForDarwinAndWindows$'
	# A room's first process keeps the lobby's supplementary groups.
	bug internal/roomuser/roomuser.go \
		'return &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}' \
		'return &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}' \
		./internal/roomuser '^TestRun$'
	# The tests' picked ports repeat: two listeners of one run meet.
	bug tests/ports_test.go \
		'picks.next++' \
		'_ = picks.next' \
		./tests '^TestFreePortsDiffer$'
	# The harness forks a lobby from whatever thread it runs on: a test
	# thread that ends stops the lobby (its parent-death signal).
	bug foyertest/proc_linux.go \
		'return proc.StartOnForkThread(cmd)' \
		'_ = proc.StartOnForkThread; return cmd.Start()' \
		./foyertest '^TestLobbyOutlivesTheThreadThatStartedIt$'
	# A room's door forgets the datagrams it turned away: a creator who
	# says HELLO before its seat reaches the room waits for a resend.
	bug instance/door.go \
		'd.knocks = append(d.knocks, k)' \
		'_ = k' \
		./tests '^TestCreatorsFirstHelloAnswered$'
	# Rooms that outlive the lobby are handed out before their instance
	# hears it: a lobby killed just after answering leaves the room
	# unlisted.
	bug supervisor/supervisor.go \
		'if r.row.Source == room.Exec || s.cfg.StateDir != "" {' \
		'if r.row.Source == room.Exec {' \
		./tests '^TestKillRestartChurn$'
	# The log is written straight to stderr: a stderr that stops taking
	# lines stops the lobby.
	bug cmd/foyer/serve.go \
		'log := newLogger(cfg.Log, q, color)' \
		'log := newLogger(cfg.Log, stderr, color)' \
		./tests '^TestStalledLogNeverStopsTheServer$'
	# A log reader that exits kills the lobby at its next line (SIGPIPE).
	bug cmd/foyer/serve.go \
		'	proc.SurviveBrokenPipes()' \
		'	// proc.SurviveBrokenPipes()' \
		./tests '^TestLogReaderGoneNeverStopsTheServer$'
	# A lobby started from a terminal outlives it: the hangup's SIGHUP is
	# taken for an upgrade.
	bug cmd/foyer/hangup.go \
		'if hungUp(ttys) {' \
		'if false {' \
		./tests '^TestTerminalHangupStopsTheServer$'
	# SIGPIPE is ignored, not asked for: the rooms' programs inherit it.
	bug internal/proc/sigpipe.go \
		'signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)' \
		'signal.Ignore(syscall.SIGPIPE); _ = os.Args' \
		./tests '^TestRoomProgramStartsWithSIGPIPEsDefault$'
	# An instance's heartbeats come late: a kept room that gives the same
	# account again looks silent.
	bug instance/serve.go \
		'hb := time.NewTicker(HeartbeatInterval)' \
		'hb := time.NewTicker(10 * HeartbeatInterval)' \
		./instance '^TestHeartbeatsComeWhateverTheEvents$'
	# A lobby leaves the empty cgroups of lobbies that died where they are.
	bug supervisor/contain.go \
		'if gone := tree.Sweep(deadLobby); len(gone) > 0 {' \
		'if gone := []string(nil); len(gone) > 0 {' \
		./supervisor '^TestCgroupsOfDeadLobbiesRemoved$'
	# A process's user ids are read from its group ids: a room's user in
	# use looks free.
	bug supervisor/users.go \
		'return []int{int(info.Ruid), int(info.Euid), int(info.Suid), int(info.Fsuid)}, true' \
		'return []int{int(info.Rgid), int(info.Egid), int(info.Sgid), int(info.Fsgid)}, true' \
		./supervisor '^TestUsersInUse$'
	# A spawn whose deadline passed is not said to have run out of time:
	# neither one ended by the instance at their common deadline, before
	# this process's timer ran, nor one whose timer did run.
	bug supervisor/spawn.go \
		'case ok && !time.Now().Before(deadline):' \
		'case ok && deadline.IsZero():' \
		./supervisor '^TestSpawnErrorReadsTheDeadlineFromTheClock$'
	# A seat's token presented from an unconnected socket is taken as
	# admitted on any sender's EXT_ADMITTED: the Go client, then each SDK.
	bug lobby/client/extended.go \
		'return n, u != nil && fromAddr(u.AddrPort(), room), err' \
		'return n, u != nil, err' \
		./lobby/client '^TestPresent$'
	bug sdk/c/foyer.h \
		'from_port != port || memcmp(from_ip, ip, 16) != 0))' \
		'0))' \
		./tests '^TestSDKsAgainstTheLobby$/^c-gcc$'
	bug sdk/csharp/Foyer.cs \
		'if (room != null && !FromSeat((IPEndPoint)from, seat)) continue;' \
		'if (room != null && from == null) continue;' \
		./tests '^TestSDKsAgainstTheLobby$/^csharp$'
	bug sdk/js/index.js \
		'if (room && (from.port !== seat.port || unmapped(from.address) !== roomIP)) return;' \
		'if (room && false) return;' \
		./tests '^TestSDKsAgainstTheLobby$/^js$'
	bug sdk/python/foyer.py \
		'return b if src[1] == seat.port and _unmapped(src[0]) == ip else None' \
		'return b' \
		./tests '^TestSDKsAgainstTheLobby$/^python$'
	bug sdk/gdscript/foyer_client.gd \
		'if not connected and (udp.get_packet_port() != port or _ip_bytes(udp.get_packet_ip()) != room_ip):' \
		'if false:' \
		./tests '^TestSDKsAgainstTheLobby$/^gdscript$'
}

# gotest runs the tests $2 of the packages $1 in the copy.
gotest() {
	$GO test -count=1 -timeout 10m -run "$2" $1
}

# baseline: every guard passes on the real code (each set of guards once).
seen=""
baseline() {
	case "$seen" in *"|$4 $5|"*) return ;; esac
	seen="$seen|$4 $5|"
	echo "== on the real code: $5 in $4"
	gotest "$4" "$5" || { echo "FAIL: $5 fails on the real code"; exit 1; }
}

# mutant: the guards fail with the bug in, and the file is restored.
mutant() {
	found=$(OLD="$2" perl -ne '$n += () = /\Q$ENV{OLD}\E/g; END { print $n + 0 }' "$1")
	if [ "$found" != 1 ]; then
		echo "FAIL: $1 has the line to break $found times, not once: $2"
		exit 1
	fi
	cp "$1" "$1.orig"
	OLD="$2" NEW="$3" perl -pi -e 's/\Q$ENV{OLD}\E/$ENV{NEW}/' "$1"
	echo "== $1: $3"
	if ! $GO vet $4 >/dev/null; then
		echo "FAIL: the bug in $1 does not build"
		exit 1
	fi
	if gotest "$4" "$5" >"$copy/out" 2>&1; then
		cat "$copy/out"
		echo "FAIL: $5 passes with the bug in $1: $3"
		exit 1
	fi
	# What the guards said, without the logs they print on failure.
	grep -E '^(--- FAIL|FAIL)|^\s+\S+\.go:[0-9]+: [^{]' "$copy/out" || true
	mv "$1.orig" "$1"
}

bug() { baseline "$@"; }
bugs
bug() { mutant "$@"; }
bugs
echo "== every bug made its guards fail"
