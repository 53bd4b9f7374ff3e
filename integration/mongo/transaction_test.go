package mongo_test

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestFerretDBHasNoTransactions shows what FerretDB 1.x (SQLite backend)
// does with a driver transaction, which is why the MongoDB adapter has no
// unit of work (docs/mongo.md, "Transactions"). The server reports no
// replica set; a write that opens the transaction (startTransaction) is
// refused; a read ignores the transaction fields and runs outside it; an
// update after it (autocommit: false only) is applied at once and
// survives the abort; commitTransaction does not exist. A document
// route's read-then-update inside a driver transaction is therefore not
// atomic on FerretDB: its update is kept when the transaction aborts.
func TestFerretDBHasNoTransactions(t *testing.T) {
	if realMongo {
		t.Skip("shows FerretDB's behaviour; a MongoDB replica set runs transactions")
	}
	c := client(t, uriA)
	ctx := context.Background()
	coll := c.Database(freshName()).Collection("orders")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "seed"}, {Key: "n", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	var hello bson.M
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
		t.Fatal(err)
	}
	if _, ok := hello["setName"]; ok {
		t.Errorf("hello reports a replica set: %v", hello["setName"])
	}
	n := func() any {
		var doc bson.M
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "seed"}}).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		return doc["n"]
	}
	code := func(err error) int32 {
		var ce driver.CommandError
		if errors.As(err, &ce) {
			return ce.Code
		}
		var we driver.WriteException
		if errors.As(err, &we) && we.WriteConcernError != nil {
			return int32(we.WriteConcernError.Code)
		}
		return -1
	}
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)

	// A write opening the transaction is refused: FailedToParse (9).
	must0 := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must0(sess.StartTransaction())
	sctx := driver.NewSessionContext(ctx, sess)
	_, err = coll.InsertOne(sctx, bson.D{{Key: "_id", Value: "o1"}})
	if code(err) != 9 {
		t.Errorf("insert opening a transaction: %v, want FailedToParse (9)", err)
	}
	_ = sess.AbortTransaction(ctx)

	// A read first runs outside; the update after it is applied at once
	// and the abort, which FerretDB does not know, keeps it.
	must0(sess.StartTransaction())
	if err := coll.FindOne(sctx, bson.D{{Key: "_id", Value: "seed"}}).Err(); err != nil {
		t.Errorf("read inside the transaction: %v", err)
	}
	if _, err := coll.UpdateOne(sctx, bson.D{{Key: "_id", Value: "seed"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
		t.Errorf("update inside the transaction: %v", err)
	}
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Errorf("abort: %v (the driver ignores the server's answer)", err)
	}
	if got := n(); got != int32(2) {
		t.Errorf("after the abort n = %v, want 2: the update was kept", got)
	}

	// There is no commit: CommandNotFound (59).
	must0(sess.StartTransaction())
	_ = coll.FindOne(sctx, bson.D{{Key: "_id", Value: "seed"}}).Err()
	if err := sess.CommitTransaction(ctx); code(err) != 59 {
		t.Errorf("commit: %v, want CommandNotFound (59)", err)
	}

	// The adapter's document route, on the session's client, does the
	// same inside a driver transaction: its Get runs outside it, its
	// Update is kept.
	var docs *mongo.Documents[item]
	start(t, mongo.Module("m", mongo.Use(c), mongo.Database(freshName()),
		mongo.Document[item]("items", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("items")})),
		fx.Populate(&docs))
	tctx := ctxOf(tenancytest.TenantA)
	if _, err := docs.Create(tctx, "a", item{N: 1}); err != nil {
		t.Fatal(err)
	}
	sess2, err := c.StartSession()
	must0(err)
	defer sess2.EndSession(ctx)
	_, err = sess2.WithTransaction(tctx, func(ctx context.Context) (any, error) {
		rec, err := docs.Get(ctx, "a")
		if err != nil {
			return nil, err
		}
		if _, err := docs.Update(ctx, "a", item{N: 2}, rec.Version); err != nil {
			return nil, err
		}
		return nil, errors.New("abort")
	})
	if err == nil || err.Error() != "abort" {
		t.Errorf("WithTransaction: %v", err)
	}
	if rec, err := docs.Get(tctx, "a"); err != nil || rec.Value.N != 2 {
		t.Errorf("after the aborted transaction the record is %+v (%v), want the update kept", rec, err)
	}
}
