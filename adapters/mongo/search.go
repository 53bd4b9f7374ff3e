package mongo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/tenantwire/tenantwire/capability"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tenantwire/tenantwire/document"
)

const (
	fieldText  = "text"
	fieldTerms = "terms"
)

// SearchRoute adds a search route, provided as *Search name:"<name>". Its
// index lives inside its collection, so only the collection counts towards
// namespace.
func SearchRoute(name string, cfg RouteConfig) Option {
	return namedRoute(name, kindSearch, cfg, func(r route) *Search { return &Search{route: r} })
}

// Search indexes short texts by id and finds them by their words.
type Search struct{ route route }

// Put indexes text under id, replacing what id held.
func (s *Search) Put(ctx context.Context, id, text string) error {
	ctx, t, err := s.route.target(ctx)
	if err != nil {
		return err
	}
	defer t.release()
	doc := t.stamp(id, bson.E{Key: fieldID, Value: id}, bson.E{Key: fieldText, Value: text},
		bson.E{Key: fieldTerms, Value: terms(text)})
	_, err = t.coll.ReplaceOne(ctx, t.byID(id), doc, options.Replace().SetUpsert(true))
	if err != nil {
		return fmt.Errorf("mongo: %s put: %w", s.route.spec.name, err)
	}
	return nil
}

// Remove drops id from the index, or returns document.ErrNotFound.
func (s *Search) Remove(ctx context.Context, id string) error {
	ctx, t, err := s.route.target(ctx)
	if err != nil {
		return err
	}
	defer t.release()
	res, err := t.coll.DeleteOne(ctx, t.byID(id))
	if err != nil {
		return fmt.Errorf("mongo: %s remove: %w", s.route.spec.name, err)
	}
	if res.DeletedCount == 0 {
		return document.ErrNotFound
	}
	return nil
}

// Search returns up to limit hits (0: no limit) holding every word of q,
// ordered by id, each with its indexed Text. With TextIndex it runs $text
// instead (any word matches).
func (s *Search) Search(ctx context.Context, q string, limit int) ([]capability.Hit, error) {
	ctx, t, err := s.route.target(ctx)
	if err != nil {
		return nil, err
	}
	defer t.release()
	filter, ok := s.filter(t, q)
	if !ok {
		return nil, nil
	}
	opts := options.Find().SetSort(bson.D{{Key: fieldID, Value: 1}})
	if limit > 0 {
		opts.SetLimit(int64(limit))
	}
	cur, err := t.coll.Find(ctx, filter, opts)
	if err != nil {
		return nil, fmt.Errorf("mongo: %s search: %w", s.route.spec.name, err)
	}
	defer cur.Close(ctx)
	var hits []capability.Hit
	for cur.Next(ctx) {
		id, ok1 := cur.Current.Lookup(fieldID).StringValueOK()
		text, ok2 := cur.Current.Lookup(fieldText).StringValueOK()
		if !ok1 || !ok2 {
			return nil, errors.New("mongo: malformed search document")
		}
		hits = append(hits, capability.Hit{ID: id, Text: text})
	}
	return hits, cur.Err()
}

// Count returns how many indexed texts hold every word of q.
func (s *Search) Count(ctx context.Context, q string) (int, error) {
	ctx, t, err := s.route.target(ctx)
	if err != nil {
		return 0, err
	}
	defer t.release()
	filter, ok := s.filter(t, q)
	if !ok {
		return 0, nil
	}
	n, err := t.coll.CountDocuments(ctx, filter)
	if err != nil {
		return 0, fmt.Errorf("mongo: %s count: %w", s.route.spec.name, err)
	}
	return int(n), nil
}

// filter is the tenant predicate followed by the match; false when q has
// no words (nothing matches).
func (s *Search) filter(t target, q string) (bson.D, bool) {
	words := terms(q)
	if len(words) == 0 {
		return nil, false
	}
	if s.route.spec.cfg.TextIndex {
		return t.filter(bson.E{Key: "$text", Value: bson.D{{Key: "$search", Value: q}}}), true
	}
	return t.filter(bson.E{Key: fieldTerms, Value: bson.D{{Key: "$all", Value: words}}}), true
}

// terms are the distinct lower-cased words of s.
func terms(s string) []string {
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	slices.Sort(words)
	return slices.Compact(words)
}

// searchIndexes are the indexes Provision creates for a search route.
func searchIndexes(r *routeSpec) []driver.IndexModel {
	keys := bson.D{}
	if r.cfg.TenantAware {
		keys = append(keys, bson.E{Key: fieldTenant, Value: 1})
	}
	if r.cfg.TextIndex {
		keys = append(keys, bson.E{Key: fieldText, Value: "text"})
		return []driver.IndexModel{{Keys: keys, Options: options.Index().SetName(r.name + "_text")}}
	}
	keys = append(keys, bson.E{Key: fieldTerms, Value: 1})
	return []driver.IndexModel{{Keys: keys, Options: options.Index().SetName(r.name + "_terms")}}
}
