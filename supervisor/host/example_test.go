package host_test

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/supervisor/host"
)

// The host launches an instance, starts it on a port, and follows its
// status until it ends.
func ExampleLaunch() {
	ctx := context.Background()
	p, err := host.Launch(ctx, host.LaunchConfig{
		Cmd:          exec.Command("echo-room"),
		StartTimeout: 5 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := p.Start(ctx, instance.Assignment{RoomID: 1, Port: 30000, MaxPlayers: 4}); err != nil {
		p.Kill()
		return
	}
	for s := range p.Status() {
		fmt.Println(s.State, s.Players)
	}
	<-p.Exited()
	fmt.Println(p.ExitStatus())
}
