//go:build linux

package nftdoor

// Walk forgets the flows to port as kernels without a filtered flush
// have it done.
func (d *Door) Walk(port uint16) error {
	d.ctMu.Lock()
	defer d.ctMu.Unlock()
	return d.walk(port)
}
