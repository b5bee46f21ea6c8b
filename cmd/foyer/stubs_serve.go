package main

import "io"

// runServe is implemented by the lobby work (placeholder).
func runServe(args []string, stdout, stderr io.Writer) int { return 1 }
