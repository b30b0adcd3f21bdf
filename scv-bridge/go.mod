module github.com/scv-cli/scv/scv-bridge

go 1.26.0

require (
	github.com/coder/websocket v1.8.15
	github.com/scv-cli/scv/shared v0.0.0
	github.com/skip2/go-qrcode v0.0.0-20200617195104-da1b6568686e
	github.com/spf13/cobra v1.10.2
	go.etcd.io/bbolt v1.4.3
	go.uber.org/goleak v1.3.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/pelletier/go-toml/v2 v2.4.3 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/scv-cli/scv/shared => ../shared
