package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrUnavailable is wrapped by Open's error when Foyer cannot contain
// rooms in cgroups at all: no cgroup filesystem, no permission, a kernel
// too old. The text says what the host needs.
var ErrUnavailable = errors.New("unavailable")

// ErrName is wrapped by the error for a tree or room name that is not
// 1 to 64 letters, digits, '-' or '_'.
var ErrName = errors.New("invalid name")

// Tree is the subtree of cgroups where one lobby keeps its rooms: a
// directory named by Open in the cgroup the lobby runs in, in each
// hierarchy that matters. It is safe for concurrent use.
type Tree struct {
	name string
	// mu orders the making of rooms against the removal of the tree's
	// directories once its last room is gone (prune), in this process.
	mu sync.Mutex
	// hs[0] tracks the rooms' processes (lists and kills them): the
	// unified hierarchy when there is one, else the first v1 one.
	hs  []hierarchy
	at  [nRoles]int    // the index in hs serving each role, -1 if none
	why [nRoles]string // for a role with no hierarchy, why, for the operator
}

// hierarchy is one cgroup hierarchy as the tree uses it.
type hierarchy struct {
	v2   bool
	base string // the lobby's own cgroup, where its forking thread returns (v1)
	dir  string // the tree: base/name; rooms are its subdirectories
	// controllers are, for v1, those mounted here that Foyer uses; for v2,
	// those enabled in the tree's cgroup.subtree_control.
	controllers []string
	// v2: the controllers Open enabled in base's cgroup.subtree_control,
	// and whether it moved this process into base/lobbyLeaf for that;
	// Remove undoes both.
	enabled []string
	moved   bool
}

// lobbyLeaf is the cgroup v2 leaf, beside the trees, where Open moves the
// lobby when the lobby's own cgroup must pass controllers on.
const lobbyLeaf = "foyer-lobby"

// role is a job one hierarchy does for every room.
type role int

const (
	roleMemory   role = iota // memory limit, resident memory, OOM kills
	roleCPUMax               // CPU bandwidth limit
	roleCPUUsage             // CPU time used
	rolePids                 // process count limit
	roleFreeze               // v1 freezer: stops processes while they are killed
	nRoles
)

// controller is the controller each role needs, also the word for it in
// messages.
var controller = [nRoles]string{ctrlMemory, ctrlCPU, ctrlCPUAcct, ctrlPids, ctrlFreezer}

// options are knobs only tests turn, to take the v1 paths on a host that
// also has the unified hierarchy.
type options struct {
	noV2      bool // ignore the unified hierarchy
	noFreezer bool // ignore the v1 freezer
}

// Open finds the cgroup hierarchies, the cgroup this process runs in, and
// prepares the subtree name in it where the rooms' cgroups go (creating
// it, or finding the one a previous run left). name is fixed per lobby so
// a restarted lobby finds its rooms again; two lobbies running in the
// same cgroup need different names.
//
// On cgroup v2 the controllers (memory, cpu, pids) are passed down to the
// subtree. A cgroup that holds processes cannot pass controllers on (v2's
// no-internal-processes rule), so when the lobby's own cgroup refuses,
// Open moves this process (all its threads) into a leaf beside the
// subtree, "foyer-lobby", and tries again; a process already in such a
// leaf counts as being in its parent. Under systemd the unit needs
// Delegate=yes for its cgroup to be Foyer's to arrange. Call Open before
// the lobby starts any process: a child left in the lobby's cgroup keeps
// it from passing controllers on.
//
// A controller that cannot be had is no error here: Check and Create
// refuse the limits that need it, with the reason. The error, wrapping
// ErrUnavailable, is for no usable hierarchy at all.
func Open(name string) (*Tree, error) { return open(name, options{}) }

func open(name string, o options) (*Tree, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w: %v", ErrUnavailable, err)
	}
	pc, err := threadCgroups()
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w: %v", ErrUnavailable, err)
	}
	t := &Tree{name: name}
	why := map[string]string{}
	var failures, advices []string
	for _, p := range locate(parseMountinfo(mi), parseProcCgroup(pc)) {
		var h hierarchy
		if p.v2 {
			if o.noV2 {
				continue
			}
			h, err = prepareV2(p.dir, name, why)
		} else {
			p.controllers = slices.DeleteFunc(p.controllers, func(c string) bool { return !t.needsV1(c, o) })
			if len(p.controllers) == 0 {
				continue
			}
			h, err = prepareV1(p, name)
		}
		if err != nil {
			a := advice(err, p.v2)
			failures = append(failures, err.Error())
			if a != "" && !slices.Contains(advices, a) {
				advices = append(advices, a)
			}
			for _, c := range p.controllers {
				why[c] = explain(err, p.v2)
			}
			continue
		}
		t.hs = append(t.hs, h)
	}
	if len(t.hs) == 0 {
		if len(failures) == 0 {
			failures = append(failures, "no cgroup filesystem is mounted (mount cgroup2 on /sys/fs/cgroup)")
		}
		return nil, fmt.Errorf("cgroup: %w: %s", ErrUnavailable, strings.Join(append(failures, advices...), "; "))
	}
	t.assign(why)
	// An idle lobby holds no cgroup: one killed before it made a room
	// leaves none behind. Create makes the tree again.
	t.prune()
	return t, nil
}

// threadCgroups reads the cgroups of the calling thread. On v1, which
// moves single threads, /proc/self/cgroup names those of the process's
// first thread, which may be the one forking a room from inside the
// room's cgroups at that moment (Room.Start): a tree founded there would
// be nested in that room, and so would the rooms of every tree opened
// after it. A thread that is not starting a room is in the lobby's own.
func threadCgroups() ([]byte, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return os.ReadFile("/proc/thread-self/cgroup")
}

// Name is the tree's name, as given to Open.
func (t *Tree) Name() string { return t.name }

// needsV1 reports whether the v1 controller c is worth a directory:
// memory, cpu and pids when the unified hierarchy does not offer them;
// cpuacct and freezer only without the unified hierarchy, which measures
// CPU time and kills by itself.
func (t *Tree) needsV1(c string, o options) bool {
	var v2 *hierarchy
	if len(t.hs) > 0 && t.hs[0].v2 {
		v2 = &t.hs[0]
	}
	switch c {
	case ctrlFreezer:
		return v2 == nil && !o.noFreezer
	case ctrlCPUAcct:
		return v2 == nil
	default:
		return v2 == nil || !slices.Contains(v2.controllers, c)
	}
}

// prepareV2 makes the subtree in the unified hierarchy's cgroup base and
// passes the controllers down to it, recording in why the reason for each
// one it cannot have. An error means the hierarchy cannot be used.
func prepareV2(base, name string, why map[string]string) (hierarchy, error) {
	if path.Base(base) == lobbyLeaf {
		base = path.Dir(base) // where an earlier Open moved this process
	}
	h := hierarchy{v2: true, base: base, dir: path.Join(base, name)}
	err := os.Mkdir(h.dir, 0o755)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return h, fmt.Errorf("cgroup v2: %w", err)
	}
	if !exists(h.dir + "/cgroup.kill") {
		if err == nil {
			os.Remove(h.dir)
		}
		return h, fmt.Errorf("cgroup v2 in %s has no cgroup.kill: Linux 5.14 or later is needed", base)
	}
	offered := words(base + "/cgroup.controllers")
	var want []string
	for _, c := range []string{ctrlMemory, ctrlCPU, ctrlPids} {
		if slices.Contains(offered, c) {
			want = append(want, c)
		} else {
			why[c] = fmt.Sprintf("cgroup v2 does not offer the %s controller to %s (cgroup.controllers): delegate it to Foyer's cgroup (systemd: Delegate=yes in the unit)", c, base)
		}
	}
	// Enabled in base, a controller becomes available in the tree, which
	// passes it on to the rooms.
	want = h.enableControllers(want, why)
	for _, c := range want {
		if err := write(h.dir+"/cgroup.subtree_control", "+"+c); err != nil {
			why[c] = fmt.Sprintf("cgroup v2: enabling %s in %s: %v", c, h.dir, err)
			continue
		}
		h.controllers = append(h.controllers, c)
	}
	return h, nil
}

// enableControllers enables want in h.base's cgroup.subtree_control, so
// that the subtree below it gets them, and returns those enabled. When
// base refuses because it holds processes, this process moves into the
// leaf lobbyLeaf and base is asked again; processes other than this one
// left in base make that fail for good.
func (h *hierarchy) enableControllers(want []string, why map[string]string) []string {
	var got []string
	base := h.base
	for _, c := range want {
		if slices.Contains(words(base+"/cgroup.subtree_control"), c) {
			got = append(got, c)
			continue
		}
		err := write(base+"/cgroup.subtree_control", "+"+c)
		if errors.Is(err, unix.EBUSY) && !h.moved {
			if err = moveSelf(path.Join(base, lobbyLeaf)); err == nil {
				h.moved = true
				err = write(base+"/cgroup.subtree_control", "+"+c)
			}
		}
		switch {
		case err == nil:
			got = append(got, c)
			h.enabled = append(h.enabled, c)
		case errors.Is(err, unix.EBUSY):
			why[c] = fmt.Sprintf("cgroup v2: %s holds processes other than foyer, so it cannot pass the %s controller on (a cgroup v2 with processes has no controlled children): run foyer in a cgroup of its own, e.g. a systemd service with Delegate=yes", base, c)
		default:
			why[c] = explain(fmt.Errorf("cgroup v2: enabling %s in %s: %w", c, base, err), true)
		}
	}
	return got
}

// moveSelf moves this process, all its threads, into the cgroup v2 dir,
// creating it.
func moveSelf(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return write(dir+"/cgroup.procs", strconv.Itoa(os.Getpid()))
}

// restore undoes what Open did to the lobby's own v2 cgroup: disables the
// controllers it enabled there, moves this process back and removes the
// leaf. It fails while another subtree of base still uses them.
func (h hierarchy) restore() error {
	for _, c := range h.enabled {
		if err := write(h.base+"/cgroup.subtree_control", "-"+c); err != nil {
			return err
		}
	}
	if !h.moved {
		return nil
	}
	if err := moveSelf(h.base); err != nil {
		return err
	}
	return os.Remove(path.Join(h.base, lobbyLeaf))
}

// prepareV1 makes the subtree in the v1 hierarchy of p.
func prepareV1(p place, name string) (hierarchy, error) {
	h := hierarchy{base: p.dir, dir: path.Join(p.dir, name), controllers: p.controllers}
	if err := os.Mkdir(h.dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return h, fmt.Errorf("cgroup v1 %s: %w", strings.Join(p.controllers, ","), err)
	}
	return h, nil
}

// explain is err's text with advice's.
func explain(err error, v2 bool) string {
	if a := advice(err, v2); a != "" {
		return err.Error() + ": " + a
	}
	return err.Error()
}

// advice says what the operator can do about err from a hierarchy of
// cgroup v2 or v1, or "".
func advice(err error, v2 bool) string {
	switch {
	case errors.Is(err, fs.ErrPermission) && v2:
		return "run foyer as root, or as a systemd service with Delegate=yes"
	case errors.Is(err, fs.ErrPermission):
		return "run foyer as root (cgroup v1 is not delegated)"
	case errors.Is(err, unix.EROFS):
		return "the cgroup filesystem is read-only (in a container, give it a private, writable cgroup namespace)"
	}
	return ""
}

// assign picks the hierarchy for each role, the unified one first.
func (t *Tree) assign(why map[string]string) {
	for r := range nRoles {
		t.at[r] = -1
		for i, h := range t.hs {
			if h.serves(r) {
				t.at[r] = i
				break
			}
		}
		if t.at[r] >= 0 {
			continue
		}
		c := controller[r]
		if r == roleCPUUsage {
			c = ctrlCPU // what the operator knows: CPU accounting
		}
		switch {
		case why[controller[r]] != "":
			t.why[r] = why[controller[r]]
		case r == roleCPUMax && slices.ContainsFunc(t.hs, func(h hierarchy) bool { return slices.Contains(h.controllers, ctrlCPU) }):
			t.why[r] = "the kernel has no CFS bandwidth control (CONFIG_CFS_BANDWIDTH)"
		default:
			t.why[r] = fmt.Sprintf("no cgroup hierarchy offers the %s controller (cgroup v2: not in cgroup.controllers; cgroup v1: not mounted)", c)
		}
	}
}

// serves reports whether h can do role r.
func (h hierarchy) serves(r role) bool {
	has := func(c string) bool { return slices.Contains(h.controllers, c) }
	switch r {
	case roleMemory:
		return has(ctrlMemory)
	case roleCPUMax:
		return has(ctrlCPU) && (h.v2 || exists(h.dir+"/cpu.cfs_quota_us"))
	case roleCPUUsage:
		return h.v2 || has(ctrlCPUAcct) // v2: cpu.stat needs no controller
	case rolePids:
		return has(ctrlPids)
	case roleFreeze:
		return !h.v2 && has(ctrlFreezer)
	}
	return false
}

// String describes the tree for the lobby's start line: each hierarchy
// with its directory and controllers, how rooms are killed, and what is
// missing.
func (t *Tree) String() string {
	var parts []string
	for _, h := range t.hs {
		v, ctrls := "v1", strings.Join(h.controllers, ",")
		if h.v2 {
			v = "v2"
			if ctrls == "" {
				ctrls = "no controllers"
			}
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", v, h.dir, ctrls))
	}
	s := "cgroup " + strings.Join(parts, ", ") + "; rooms killed by " + t.killMethod()
	var missing []string
	for r, i := range t.at {
		if i < 0 && role(r) != roleFreeze {
			missing = append(missing, t.why[r])
		}
	}
	if len(missing) > 0 {
		s += "; missing: " + strings.Join(missing, "; ")
	}
	return s
}

// killMethod names how Kill ends a room's processes.
func (t *Tree) killMethod() string {
	switch {
	case t.hs[0].v2:
		return "cgroup.kill"
	case t.at[roleFreeze] >= 0:
		return "freezing and signalling every process"
	default:
		return "signalling every process until none is left"
	}
}

// Check returns nil if every limit set in l can be enforced here, or an
// error wrapping ErrLimit that says, for each one that cannot, why.
func (t *Tree) Check(l Limits) error {
	errs := l.validate()
	need := func(set bool, r role, key string) {
		if set && t.at[r] < 0 {
			errs = append(errs, fmt.Errorf("cgroup: %s: %w: %s", key, ErrLimit, t.why[r]))
		}
	}
	need(l.MemoryMax > 0, roleMemory, "memory_max")
	need(l.CPUMax > 0, roleCPUMax, "cpu_max")
	need(l.PidsMax > 0, rolePids, "pids_max")
	return errors.Join(errs...)
}

// Create makes the cgroup of the room name and applies l to it. It fails
// if the cgroup exists (a room of an earlier run: see Room and List), if
// l cannot be enforced (see Check), or if name is not valid (ErrName).
// The tree's own directories exist only while they hold rooms: Create
// makes them when they are missing (the tree's last room was removed, by
// this process or by a room's keeper that left it).
func (t *Tree) Create(name string, l Limits) (*Room, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := t.Check(l); err != nil {
		return nil, err
	}
	r := t.room(name)
	r.pids = l.PidsMax
	t.mu.Lock()
	for i, d := range r.dirs {
		err := os.Mkdir(d, 0o755)
		// Another process (a keeper leaving its room) may remove the
		// tree between remaking it and the room's mkdir: a few tries.
		for try := 0; errors.Is(err, fs.ErrNotExist) && try < 3; try++ {
			if err = t.hs[i].remake(); err == nil {
				err = os.Mkdir(d, 0o755)
			}
		}
		if err != nil {
			t.mu.Unlock()
			r.removeDirs(i)
			return nil, fmt.Errorf("cgroup: room %s: %w", name, err)
		}
	}
	t.mu.Unlock()
	if err := r.apply(l); err != nil {
		r.Remove()
		return nil, fmt.Errorf("cgroup: room %s: %w", name, err)
	}
	return r, nil
}

// remake makes the tree's directory in h again, as Open prepared it.
func (h hierarchy) remake() error {
	err := os.Mkdir(h.dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil || !h.v2 {
		return err
	}
	for _, c := range h.controllers {
		if err := write(h.dir+"/cgroup.subtree_control", "+"+c); err != nil {
			return err
		}
	}
	return nil
}

// prune removes the tree's directories that hold no room; the kernel
// refuses to remove one that does.
func (t *Tree) prune() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, h := range t.hs {
		_ = os.Remove(h.dir)
	}
}

// Sweep removes the other trees beside this one (in the lobby's own
// cgroups) that dead reports as those of lobbies that no longer run, with
// their rooms' cgroups: what a lobby killed while it made a room, before
// that room could end itself, leaves behind. Only cgroups that hold no
// process go (the kernel refuses the others), so a room still running
// is left alone, and nothing is killed. It returns the names of the
// trees it removed from every hierarchy.
func (t *Tree) Sweep(dead func(name string) bool) []string {
	var gone []string
	seen := map[string]bool{t.name: true}
	for _, h := range t.hs {
		ents, _ := os.ReadDir(h.base)
		for _, e := range ents {
			name := e.Name()
			if !e.IsDir() || seen[name] || !dead(name) {
				continue
			}
			seen[name] = true
			other := t.beside(name)
			rooms, _ := other.List()
			for _, r := range rooms {
				_ = other.room(r).removeDirs(len(other.hs))
			}
			other.prune()
			if !slices.ContainsFunc(other.hs, func(h hierarchy) bool { return exists(h.dir) }) {
				gone = append(gone, name)
			}
		}
	}
	slices.Sort(gone)
	return gone
}

// beside is the tree called name beside t, in t's hierarchies.
func (t *Tree) beside(name string) *Tree {
	o := &Tree{name: name, hs: slices.Clone(t.hs)}
	for i := range o.hs {
		o.hs[i].dir = path.Join(o.hs[i].base, name)
	}
	return o
}

// Room returns the existing cgroup of the room name, as a lobby adopting
// the rooms of an earlier run finds them. The error satisfies
// errors.Is(err, fs.ErrNotExist) when there is none.
func (t *Tree) Room(name string) (*Room, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	r := t.room(name)
	if slices.ContainsFunc(r.dirs, exists) {
		return r, nil
	}
	return nil, fmt.Errorf("cgroup: room %s: %w", name, fs.ErrNotExist)
}

func (t *Tree) room(name string) *Room {
	r := &Room{t: t, name: name, pids: -1}
	for _, h := range t.hs {
		r.dirs = append(r.dirs, path.Join(h.dir, name))
	}
	return r
}

// List returns the names of the rooms' cgroups in the tree, sorted: after
// a restart, those of the earlier run, to adopt (Room) or to end (Kill,
// then Remove). A room whose cgroup exists in only some hierarchies (a
// lobby that died while creating it) is listed too.
func (t *Tree) List() ([]string, error) {
	var names []string
	for _, h := range t.hs {
		ents, err := os.ReadDir(h.dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue // no room: see Create
		}
		if err != nil {
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		for _, e := range ents {
			if e.IsDir() && !slices.Contains(names, e.Name()) {
				names = append(names, e.Name())
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// Remove removes the tree's directories, once no room's cgroup is left in
// them, and on v2 puts the lobby's own cgroup back as Open found it (see
// Open): the lobby leaves the "foyer-lobby" leaf. It is for a lobby that
// ends with all its rooms; call it when nothing else forks rooms.
func (t *Tree) Remove() error {
	var errs []error
	for _, h := range t.hs {
		err := os.Remove(h.dir)
		switch {
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			errs = append(errs, err)
		case h.v2:
			errs = append(errs, h.restore())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	return nil
}

// checkName refuses a name that is not a plain directory name of 1 to 64
// letters, digits, '-' and '_': no dots, so that it can never be taken
// for one of the cgroup files ("memory.max") or climb out of the tree.
func checkName(name string) error {
	ok := len(name) > 0 && len(name) <= 64
	for _, c := range name {
		ok = ok && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_')
	}
	if !ok {
		return fmt.Errorf("cgroup: %w: %q", ErrName, name)
	}
	return nil
}
