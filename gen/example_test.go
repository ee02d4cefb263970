package gen_test

import (
	"fmt"
	"strings"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/driver"
	"github.com/sluice-go/sluice/gen"
)

// Generate gorm models for PostgreSQL with Better Auth's table and
// column names.
func ExampleGenerate() {
	files, err := gen.Generate(gen.Config{
		Target:  gen.Gorm,
		Dialect: gen.Postgres,
		Package: "models",
		Naming:  core.Naming{Preset: core.BetterAuth},
	})
	if err != nil {
		panic(err)
	}
	for _, f := range files {
		for _, line := range strings.Split(string(f.Data), "\n") {
			if strings.Contains(line, "LastRequest ") || strings.Contains(line, "TableName()") {
				fmt.Printf("%s: %s\n", f.Name, strings.Join(strings.Fields(line), " "))
			}
		}
	}
	// Output:
	// apikey.go: LastRequest *time.Time `gorm:"column:lastRequest;type:TIMESTAMPTZ(3)"`
	// apikey.go: func (APIKey) TableName() string { return "apikey" }
	// apikeylimit.go: func (APIKeyLimit) TableName() string { return "apikeyLimit" }
	// apikeyrefill.go: func (APIKeyRefill) TableName() string { return "apikeyRefill" }
	// ratelimit.go: LastRequest int64 `gorm:"column:lastRequest;type:BIGINT;not null;default:0;index:rateLimit_lastRequest_idx"`
	// ratelimit.go: func (RateLimit) TableName() string { return "rateLimit" }
	// rerolledkey.go: func (RerolledKey) TableName() string { return "rerolledKey" }
}

// Plan what brings an existing table to the schema: here the rate_limit
// table lacks its last_request column (and so its index) and has a column
// of its own, which the plan leaves alone.
func ExampleDiff() {
	s := core.MustSchema(core.Naming{})
	rl, _ := s.Table(core.ModelRateLimit)
	plan, err := gen.Diff(s, []*driver.Table{rl}, gen.MySQL, gen.Catalog{"rate_limit": {
		Name: "rate_limit",
		Columns: []gen.ExistingColumn{
			{Name: "id", Type: "bigint(20)"},
			{Name: "key", Type: "varchar(255)"},
			{Name: "count", Type: "bigint(20)", HasDefault: true},
			{Name: "note", Type: "text", Nullable: true},
		},
		Indexes: []gen.ExistingIndex{{Name: "rate_limit_key_key", Unique: true, Columns: []string{"key"}}},
	}})
	if err != nil {
		panic(err)
	}
	fmt.Print(gen.Script(plan.Statements))
	fmt.Println(plan.Left)
	// Output:
	// ALTER TABLE `rate_limit` ADD COLUMN `last_request` BIGINT NOT NULL DEFAULT 0;
	//
	// CREATE INDEX `rate_limit_last_request_idx` ON `rate_limit` (`last_request`);
	// [column rate_limit.note is not in the schema; left as it is]
}
