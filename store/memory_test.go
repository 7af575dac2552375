package store_test

import (
	"testing"

	"github.com/queuelab/qlab/store"
	"github.com/queuelab/qlab/store/storetest"
)

func TestMemoryContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return store.NewMemory() })
}
