package frontend

import "net/netip"

// Interleave returns items reordered so that their networks take turns:
// the first item of every network, networks in the order of their first
// items, then the second of every network, and so on; each network's items
// keep their order. A list cut to a size then carries every network's
// first items before any network's later ones, so that one network's many
// entries cannot push the others out.
func Interleave[T any](items []T, network func(T) netip.Prefix) []T {
	index := make(map[netip.Prefix]int)
	var groups [][]T
	for _, it := range items {
		p := network(it)
		i, ok := index[p]
		if !ok {
			i = len(groups)
			index[p] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], it)
	}
	out := make([]T, 0, len(items))
	for round := 0; len(out) < len(items); round++ {
		for _, g := range groups {
			if round < len(g) {
				out = append(out, g[round])
			}
		}
	}
	return out
}
