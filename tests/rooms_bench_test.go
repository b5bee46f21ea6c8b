package tests

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/proc"
	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/internal/roomuser"
	"github.com/foyerlobby/foyer/supervisor"
)

// BenchmarkServeIdleRooms measures the rooms a real foyer serve runs, as
// make build leaves it (foyer-room beside foyer, which runs every room
// from it: the benchmark checks that each room's processes are
// foyer-room's): 100 reference rooms, created through its lobby and left
// idle, first as users of their own (where foyer serve runs as root: each
// room then has a warden beside it), then as the lobby's user
// (room_users = ""); and, to compare in the same run, as the lobby's user
// from a foyer alone, without foyer-room beside it, which runs its rooms
// from its own instance subcommand (rooms-of-foyer-alone). Per room, its
// processes together (the room's, and its warden's):
//
//   - rss-MB: resident memory (VmRSS). Most of it is pages of foyer-room,
//     which every room maps, and which are in memory once however many
//     map them. Where a room has a warden, this counts those pages twice.
//   - pss-MB: the proportional share (Pss): what the room has alone, and
//     its share of what it maps with others. This is what a room adds.
//   - private-MB: what no other process maps (Private_Clean and
//     Private_Dirty): the memory the host gets back when the room ends.
//   - warden-rss-MB, warden-pss-MB: the warden's part of rss-MB and
//     pss-MB.
//
// and the CPU idle rooms use, in percent of one core per 100 rooms
// (rooms-cpu-%, their wardens' part of it wardens-cpu-%; the lobby's, for
// those rooms, is lobby-cpu-%), over one window of 5 s per iteration.
func BenchmarkServeIdleRooms(b *testing.B) {
	const rooms = 100
	for _, mode := range []struct {
		name, keys string
		root       bool
		alone      bool // foyer without foyer-room beside it
	}{
		{"rooms-as-users", "", true, false},
		{"rooms-as-lobby-user", `room_users = ""`, false, false},
		{"rooms-of-foyer-alone", `room_users = ""`, false, true},
	} {
		b.Run(mode.name, func(b *testing.B) {
			if mode.root {
				requiretest.Root(b) // rooms run as users of their own only under root
			}
			foyer, program := bin, filepath.Join(filepath.Dir(bin), supervisor.RoomProgram)
			if mode.alone {
				// A link, not a copy: a binary's pages are resident as the
				// page cache holds them, and a file just written in one
				// go is held in large folios, each mapped whole (up to the
				// whole binary), where bin's, as the linker wrote them or
				// read back later, map in smaller pieces.
				foyer = filepath.Join(b.TempDir(), "foyer")
				if err := os.Link(bin, foyer); err != nil {
					b.Fatal(err)
				}
				program = foyer
			}
			s := startServerOf(b, rooms, foyer, "info",
				"create_rate = 1000\ncreate_burst = 1000\ncreate_network_rate = 1000\ncreate_network_burst = 1000\n"+
					"unverified_create_rate = 1000\nunverified_create_burst = 1000\n",
				fmt.Sprintf("max_instances = %d\nseat_ttl = \"1h\"\nmax_waiting = \"1h\"\n%s\n[room]\nidle_timeout = \"1h\"\n", rooms, mode.keys))
			createRooms(b, s, rooms)
			time.Sleep(2 * time.Second) // past start-up and a heartbeat
			lobby := s.cmd.Process.Pid
			procs := roomProcesses(b, lobby)
			if len(procs) != rooms {
				b.Fatalf("%d room processes, want %d", len(procs), rooms)
			}
			checkRoomProgram(b, procs, program)
			var all, wardens []int
			for _, room := range procs {
				if mode.root && len(room) != 2 {
					b.Fatalf("room process %d has no warden", room[0])
				}
				all, wardens = append(all, room...), append(wardens, room[1:]...)
			}
			var cpu, wardenCPU, lobbyCPU, wall time.Duration
			for b.Loop() {
				c0, w0, l0, t0 := cpuOf(b, all...), cpuOf(b, wardens...), cpuOf(b, lobby), time.Now()
				time.Sleep(5 * time.Second)
				cpu += cpuOf(b, all...) - c0
				wardenCPU += cpuOf(b, wardens...) - w0
				lobbyCPU += cpuOf(b, lobby) - l0
				wall += time.Since(t0)
			}
			var rss, pss, private, wardenRSS, wardenPSS float64
			for _, room := range procs {
				for i, pid := range room {
					m := memoryOf(b, pid)
					rss, pss, private = rss+m.rss, pss+m.pss, private+m.private
					if i > 0 {
						wardenRSS, wardenPSS = wardenRSS+m.rss, wardenPSS+m.pss
					}
				}
			}
			b.ReportMetric(rss/rooms, "rss-MB")
			b.ReportMetric(pss/rooms, "pss-MB")
			b.ReportMetric(private/rooms, "private-MB")
			b.ReportMetric(wardenRSS/rooms, "warden-rss-MB")
			b.ReportMetric(wardenPSS/rooms, "warden-pss-MB")
			b.ReportMetric(100*cpu.Seconds()/wall.Seconds()*100/rooms, "rooms-cpu-%")
			b.ReportMetric(100*wardenCPU.Seconds()/wall.Seconds()*100/rooms, "wardens-cpu-%")
			b.ReportMetric(100*lobbyCPU.Seconds()/wall.Seconds(), "lobby-cpu-%")
		})
	}
}

// createRooms creates n rooms through s's lobby, from 8 clients at once.
func createRooms(b testing.TB, s *server, n int) {
	var wg sync.WaitGroup
	for w := range 8 {
		c := newClient(b, "127.0.0.1", s.lobby)
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				seq := uint16(i + 1)
				if r, _ := ask(c, encode(compact, createRoom, seq, 0, nil), seq); r.typ != roomCreated {
					b.Errorf("CREATE %d answered %#x", i, r.typ)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// roomProcesses lists, for each room of the lobby, its first process and
// its warden, if it has one: both children of the lobby, the warden
// named by the room's cgroups on its command line.
func roomProcesses(b testing.TB, lobby int) [][]int {
	var rooms [][]int
	wardens := map[string]int{} // by the room's cgroups, TREE/ROOM
	_, err := proc.Matching(func(pid int, cmdline []byte) bool {
		if st, err := proc.ReadStat(pid); err != nil || st.PPID != lobby {
			return false
		}
		if _, cg, ok := bytes.Cut(cmdline, []byte("\x00"+roomuser.WardenArg+"=")); ok {
			wardens[string(bytes.TrimRight(cg, "\x00"))] = pid
		} else {
			rooms = append(rooms, []int{pid})
		}
		return false // sorted into rooms and wardens here
	})
	if err != nil {
		b.Fatal(err)
	}
	for i, room := range rooms {
		cgroups, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", room[0]))
		for cg, warden := range wardens {
			if bytes.Contains(cgroups, []byte("/"+cg+"\n")) {
				rooms[i] = append(room, warden)
				delete(wardens, cg)
				break
			}
		}
	}
	if len(wardens) > 0 {
		b.Fatalf("wardens of no room of the lobby: %v", wardens)
	}
	return rooms
}

// checkRoomProgram fails b unless every process of procs (rooms' first
// processes and their wardens, as roomProcesses lists them) runs program.
func checkRoomProgram(b testing.TB, procs [][]int, program string) {
	b.Helper()
	for _, room := range procs {
		for _, pid := range room {
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || exe != program {
				b.Fatalf("room process %d runs %q (%v), want %s", pid, exe, err, program)
			}
		}
	}
}

// cpuOf is the user and system time the processes pids used so far.
func cpuOf(b *testing.B, pids ...int) time.Duration {
	var cpu time.Duration
	for _, pid := range pids {
		all, _ := cpuTime(b, pid)
		cpu += all
	}
	return cpu
}

// memory is a process's resident, proportional and private memory, in MB.
type memory struct{ rss, pss, private float64 }

func memoryOf(b *testing.B, pid int) memory {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		b.Fatal(err)
	}
	var m memory
	for line := range strings.Lines(string(raw)) {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		kb, err := strconv.Atoi(f[1])
		if err != nil {
			b.Fatalf("/proc/%d/smaps_rollup: %q", pid, line)
		}
		mb := float64(kb) / 1024
		switch f[0] {
		case "Rss:":
			m.rss += mb
		case "Pss:":
			m.pss += mb
		case "Private_Clean:", "Private_Dirty:":
			m.private += mb
		}
	}
	return m
}
