package lobby

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"net/netip"
	"time"
)

// Address validation, as QUIC's Retry: a source that has not shown it
// receives what is sent to its address gets, for an extension request, a
// token and nothing else, in a reply no longer than its request; echoing
// the token shows it. The token is stateless: a time bucket and a MAC of
// the bucket and the source IP under the lobby's secret, so that the
// lobby keeps nothing for the sources it challenges, however many a flood
// forges.
const (
	// retryBucket is the token's time step; a token is good for
	// retryBuckets steps (90 to 120 s).
	retryBucket  = 30 * time.Second
	retryBuckets = 4
	// retryMAC is how much of the HMAC a token carries.
	retryMAC = 12
	// retryTokenLen is a retry token's length.
	retryTokenLen = 4 + retryMAC
)

// retryTokens makes and checks retry tokens. Its secret is drawn at start:
// tokens of an earlier run are not valid, which costs a client one more
// round trip after a restart.
type retryTokens struct{ secret [32]byte }

func newRetryTokens() *retryTokens {
	r := &retryTokens{}
	_, _ = rand.Read(r.secret[:]) // crypto/rand does not fail
	return r
}

// make returns the token of ip at now.
func (r *retryTokens) make(ip netip.Addr, now time.Time) []byte {
	return r.of(ip, uint32(now.Unix()/int64(retryBucket/time.Second)))
}

func (r *retryTokens) of(ip netip.Addr, bucket uint32) []byte {
	tok := binary.BigEndian.AppendUint32(make([]byte, 0, sha256.Size+4), bucket)
	a := ip.Unmap().As16()
	m := hmac.New(sha256.New, r.secret[:])
	m.Write(tok)
	m.Write(a[:])
	return m.Sum(tok)[:retryTokenLen]
}

// valid reports whether tok is ip's token of one of the last buckets.
func (r *retryTokens) valid(tok []byte, ip netip.Addr, now time.Time) bool {
	if len(tok) != retryTokenLen {
		return false
	}
	bucket := binary.BigEndian.Uint32(tok)
	current := uint32(now.Unix() / int64(retryBucket/time.Second))
	if current-bucket >= retryBuckets {
		return false // too old, or from the future
	}
	return hmac.Equal(r.of(ip, bucket), tok)
}
