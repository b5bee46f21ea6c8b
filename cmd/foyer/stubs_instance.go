package main

import "io"

// runInstance is implemented by the instance work (placeholder).
func runInstance(args []string, stdout, stderr io.Writer) int { return 1 }
