module github.com/purelifecycle/machine/tools/api

go 1.26

toolchain go1.26.8
