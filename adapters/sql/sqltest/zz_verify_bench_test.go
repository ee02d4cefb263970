package sqltest_test

import (
	"testing"
	"time"

	"github.com/sluice-go/sluice/core/apikey"
)

func BenchmarkZZVerify(b *testing.B) {
	for _, be := range allBackends()[:3] {
		b.Run(be.name, func(b *testing.B) {
			e := newEnv(b, be)
			m, err := apikey.New(e.db)
			if err != nil {
				b.Fatal(err)
			}
			plain, _, err := m.Create(e.ctx, apikey.CreateParams{ReferenceID: "u1",
				RateLimit: &apikey.RateLimit{Enabled: true, Window: time.Hour, Max: 1 << 40}})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if r, err := m.Verify(e.ctx, plain); err != nil || !r.Valid {
					b.Fatal(r, err)
				}
			}
		})
	}
}
