package tests

import (
	"slices"
	"testing"
)

// Over a period of runOrder (orderPeriod: n rounds, 2n for an odd n)
// every order runs each target once, each target takes every place
// equally often, and each target runs right after each of the others
// equally often.
func TestRunOrderIsBalanced(t *testing.T) {
	for n := 1; n <= 7; n++ {
		period := orderPeriod(n)
		if want := n + n%2*n; period != want {
			t.Fatalf("n %d: period %d, want %d", n, period, want)
		}
		places := make([][]int, n) // places[target][place]
		for i := range places {
			places[i] = make([]int, n)
		}
		after := map[[2]int]int{} // [before, after]
		for i := range period {
			order := runOrder(n, i)
			if sorted := slices.Sorted(slices.Values(order)); !slices.Equal(sorted, rangeOf(n)) {
				t.Fatalf("n %d, iteration %d: order %v is not a permutation", n, i, order)
			}
			for p, k := range order {
				places[k][p]++
				if p > 0 {
					after[[2]int{order[p-1], k}]++
				}
			}
		}
		for k := range n {
			for p := range n {
				if places[k][p] != period/n {
					t.Errorf("n %d: target %d in place %d %d times, want %d", n, k, p, places[k][p], period/n)
				}
			}
			for j := range n {
				if j != k && after[[2]int{j, k}] != period/n {
					t.Errorf("n %d: target %d right after %d %d times, want %d", n, k, j, after[[2]int{j, k}], period/n)
				}
			}
		}
	}
}

func rangeOf(n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = i
	}
	return r
}

// An iteration of an edge benchmark runs whole periods of runOrder, at
// least minRounds rounds, and no period more than that takes.
func TestRoundsPerOpAreWholePeriods(t *testing.T) {
	for n := 1; n <= 7; n++ {
		r, p := roundsPerOp(n), orderPeriod(n)
		if r%p != 0 || r < minRounds || r-p >= minRounds {
			t.Errorf("n %d: %d rounds per iteration, period %d, at least %d", n, r, p, minRounds)
		}
	}
}
