package sqltest_test

import "time"

func timeLoad(name string) (*time.Location, error) { return time.LoadLocation(name) }
