module github.com/purelifecycle/machine/bench

go 1.26

require (
	github.com/looplab/fsm v1.0.3
	github.com/purelifecycle/machine v0.0.0
	github.com/qmuntal/stateless v1.7.2
	github.com/stretchr/testify v1.12.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect

replace github.com/purelifecycle/machine => ..
