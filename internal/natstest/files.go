package natstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/protocol"
)

// FilesRefused connects as party, who is not owner, and checks that NATS
// refuses it every way into owner's files bucket (to read them, to put
// or remove any, to watch them come), and every way to change what a
// bucket is, its own included (to make a stream, which could capture
// another party's subjects, or to change or delete one). Both
// configurations the project writes (bourse admin nats-config,
// nats-auth) are held to it.
func FilesRefused(t *testing.T, url, party, owner string, as nats.Option) {
	t.Helper()
	nc, refused := violations(t, url, party, as)
	bucket, stream := protocol.FilesBucketOf(owner), protocol.FilesStreamOf(owner)
	t.Run("Subscribe", func(t *testing.T) {
		subject := "$O." + bucket + ".>"
		sub, err := nc.SubscribeSync(subject)
		require.NoError(t, err)
		defer sub.Unsubscribe()
		refused(t, `Subscription to "`+subject+`"`)
	})
	t.Run("Put", func(t *testing.T) {
		require.NoError(t, nc.Publish("$O."+bucket+".C.planted", []byte("x")))
		refused(t, `Publish to "$O.`+bucket)
	})
	t.Run("ObjectStore", func(t *testing.T) {
		js, err := jetstream.New(nc)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err = js.ObjectStore(ctx, bucket)
		assert.Error(t, err, "%s opened %s's bucket", party, owner)
	})
	t.Run("JetStreamAPI", func(t *testing.T) {
		own := protocol.FilesStreamOf(party)
		for _, api := range []string{"$JS.API.STREAM.INFO." + stream, "$JS.API.DIRECT.GET." + stream, "$JS.API.STREAM.MSG.GET." + stream,
			"$JS.API.STREAM.PURGE." + stream, "$JS.API.STREAM.DELETE." + stream, "$JS.API.CONSUMER.CREATE." + stream,
			"$JS.API.STREAM.CREATE.OBJ_" + party + "_capture", "$JS.API.STREAM.UPDATE." + own, "$JS.API.STREAM.DELETE." + own} {
			_, err := nc.Request(api, []byte(`{"subjects":["bourse.v1.deliver.>"]}`), 500*time.Millisecond)
			assert.True(t, err != nil && !errors.Is(err, context.Canceled), "%s answered", api)
		}
		refused(t, `Publish to "$JS.API`)
	})
}
