package lobby

import "github.com/foyerlobby/foyer/internal/limit"

// Sources are the per-source token buckets of every edge of one Foyer
// (this native edge and the front-ends in lobby/gg2 and lobby/gunz): a
// source's allowance spans the protocols it speaks. Build one with
// NewSources.
type Sources = limit.Sources

// ReplyBudget is the per-network budget of reply bytes every UDP edge
// charges before it sends. Build one with NewReplyBudget.
type ReplyBudget = limit.Budget

// NewSources builds the source table c describes: Rate, Burst, CreateRate,
// CreateBurst and MaxSources.
func NewSources(c Config) *Sources {
	return limit.NewSources(limit.Config{
		Rate: c.Rate, Burst: c.Burst, CreateRate: c.CreateRate, CreateBurst: c.CreateBurst,
		MaxSources: c.MaxSources,
	})
}

// NewReplyBudget builds the reply budget c describes: ReflectionLimit
// bytes per second per /24 or /56, MaxPrefixes networks tracked.
func NewReplyBudget(c Config) *ReplyBudget {
	return limit.NewBudget(c.ReflectionLimit, c.MaxPrefixes)
}
