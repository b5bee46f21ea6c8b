package config_test

import (
	"fmt"

	"github.com/foyerlobby/foyer/server/config"
)

func ExampleParse() {
	_, err := config.Parse("config.toml", `
[lobby]
rate = 0

[supervisor]
ports = "9-3"
turbo = true
`)
	fmt.Println(err)
	// Output:
	// config.toml:3: [lobby] rate 0: must be above 0
	// config.toml:6: [supervisor] ports "9-3": first port above last
	// config.toml:7: [supervisor] turbo: unknown key
}
