package main

import "io"

// Client commands are implemented by the client work (placeholders).
func runRooms(args []string, stdout, stderr io.Writer) int  { return 1 }
func runCreate(args []string, stdout, stderr io.Writer) int { return 1 }
func runJoin(args []string, stdout, stderr io.Writer) int   { return 1 }
func runWatch(args []string, stdout, stderr io.Writer) int  { return 1 }
func runPlay(args []string, stdout, stderr io.Writer) int   { return 1 }
