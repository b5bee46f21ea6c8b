package tests

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/foyerlobby/foyer/supervisor"
)

// foyerRoomMissing is the start log's warning of a foyer without
// foyer-room beside it.
const foyerRoomMissing = "rooms run this executable's instance subcommand, about 7 MB more resident memory each than " +
	supervisor.RoomProgram + ", which is not beside it (make build builds both; install them together)"

// foyer serve runs its rooms (and, as root, their wardens) from
// foyer-room beside it, the executable that links only what a room
// needs; without foyer-room there, from its own instance subcommand, and
// its start log says so, naming the file it missed.
func TestServeRunsRoomsFromFoyerRoomBesideIt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		beside bool
	}{{"beside", true}, {"missing", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			foyer := filepath.Join(dir, "foyer")
			if tc.beside {
				foyer = copyBinaries(t, dir)
			} else {
				copyFile(t, bin, foyer)
			}
			s := startServerOf(t, 2, foyer, "info", "", "")
			createRooms(t, s, 1)
			procs := roomProcesses(t, s.cmd.Process.Pid)
			if len(procs) != 1 {
				t.Fatalf("%d rooms run, want 1", len(procs))
			}
			room := filepath.Join(dir, supervisor.RoomProgram)
			warned := s.logs.lines(foyerRoomMissing)
			if tc.beside {
				checkRoomProgram(t, procs, room)
				if len(warned) != 0 {
					t.Errorf("foyer-room beside foyer, yet the start warns: %v", warned)
				}
				return
			}
			checkRoomProgram(t, procs, foyer)
			if len(warned) != 1 || warned[0]["missing"] != room || warned[0]["level"] != "warn" {
				t.Errorf("no foyer-room beside foyer: the start log warns %v, want once with missing %s\n%s", warned, room, s.logs)
			}
			if _, err := os.Stat(room); err == nil {
				t.Fatal("the test's foyer has foyer-room beside it")
			}
		})
	}
}
