// glidepath-temporal-dev: a Temporal server (go.temporal.io/server) on SQLite for the tests, the benchmarks and
// `npm run servers:up`, with the namespaces, search attributes and dynamic config they need, and the Web UI. Its
// flags are named as those of `temporal server start-dev` that Glidepath uses (no UI without --ui-port).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/google/uuid"
	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	uiversion "github.com/temporalio/ui-server/v2/server/version"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/headers"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

const clusterName = "active"

type options struct {
	ip, dbFile, logLevel                string
	port, httpPort, metricsPort, uiPort int
	namespaces                          []string
	dynamicConfig                       map[string]any
	searchAttributes                    map[string]enumspb.IndexedValueType
}

type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, " ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "glidepath-temporal-dev:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "glidepath-temporal-dev:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("glidepath-temporal-dev", flag.ContinueOnError)
	o := &options{}
	version := fs.Bool("version", false, "print the server and UI versions and exit")
	fs.StringVar(&o.ip, "ip", "127.0.0.1", "IP address every service binds")
	fs.IntVar(&o.port, "port", 7233, "frontend gRPC port")
	fs.IntVar(&o.httpPort, "http-port", 0, "frontend HTTP port (required)")
	fs.IntVar(&o.metricsPort, "metrics-port", 0, "Prometheus metrics port (0: none)")
	fs.IntVar(&o.uiPort, "ui-port", 0, "Web UI port (0: no UI)")
	fs.StringVar(&o.dbFile, "db-filename", "", "SQLite file kept across restarts (empty: in memory)")
	fs.StringVar(&o.logLevel, "log-level", "warn", "debug, info, warn or error")
	var namespaces, dynamic, attributes repeated
	fs.Var(&namespaces, "namespace", "a namespace to create besides default (repeatable)")
	fs.Var(&dynamic, "dynamic-config-value", "KEY=VALUE, VALUE in JSON (repeatable)")
	fs.Var(&attributes, "search-attribute", "NAME=TYPE, TYPE one of Keyword, Text, Int, Double, Bool, Datetime, KeywordList (repeatable)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *version {
		fmt.Printf("glidepath-temporal-dev (Server %s, UI %s)\n", headers.ServerVersion, uiversion.UIVersion)
		os.Exit(0)
	}
	if o.httpPort == 0 {
		return nil, fmt.Errorf("--http-port is required")
	}
	o.namespaces = []string{"default"}
	for _, ns := range namespaces {
		if !slices.Contains(o.namespaces, ns) {
			o.namespaces = append(o.namespaces, ns)
		}
	}
	var err error
	if o.dynamicConfig, err = parseDynamicConfig(dynamic); err != nil {
		return nil, err
	}
	if o.searchAttributes, err = parseSearchAttributes(attributes); err != nil {
		return nil, err
	}
	return o, nil
}

var dynamicKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.]*$`)

// parseDynamicConfig reads KEY=JSON values; a whole number becomes an int, the type the server's settings expect.
func parseDynamicConfig(values []string) (map[string]any, error) {
	out := map[string]any{}
	for _, kv := range values {
		k, raw, ok := strings.Cut(kv, "=")
		if !ok || !dynamicKey.MatchString(k) {
			return nil, fmt.Errorf("--dynamic-config-value %q: want KEY=VALUE with a dotted key", kv)
		}
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil || dec.More() {
			return nil, fmt.Errorf("--dynamic-config-value %s: the value %q is not JSON (a string is quoted: \"1s\")", k, raw)
		}
		if n, isNum := v.(json.Number); isNum {
			if i, err := n.Int64(); err == nil {
				v = int(i)
			} else if f, err := n.Float64(); err == nil {
				v = f
			}
		}
		out[k] = v
	}
	return out, nil
}

func parseSearchAttributes(values []string) (map[string]enumspb.IndexedValueType, error) {
	out := map[string]enumspb.IndexedValueType{}
	for _, kv := range values {
		name, typ, ok := strings.Cut(kv, "=")
		var t enumspb.IndexedValueType
		for short, v := range enumspb.IndexedValueType_shorthandValue {
			if strings.EqualFold(typ, short) {
				t = enumspb.IndexedValueType(v)
			}
		}
		if !ok || name == "" || t == enumspb.INDEXED_VALUE_TYPE_UNSPECIFIED {
			return nil, fmt.Errorf("--search-attribute %q: want NAME=TYPE with a type such as Keyword", kv)
		}
		out[name] = t
	}
	return out, nil
}

func run(o *options) error {
	logger := tlog.NewZapLogger(tlog.BuildZapLogger(tlog.Config{Level: o.logLevel, Format: "json"}))
	conf, err := serverConfig(o)
	if err != nil {
		return err
	}
	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return fmt.Errorf("authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return fmt.Errorf("claim mapper: %w", err)
	}
	hosts := map[primitives.ServiceName]static.Hosts{}
	for name, svc := range conf.Services {
		hosts[primitives.ServiceName(name)] = static.SingleLocalHost(fmt.Sprintf("%s:%d", o.ip, svc.RPC.GRPCPort))
	}
	server, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynamicConfig(o)),
	)
	if err != nil {
		return err
	}
	if err := server.Start(); err != nil {
		return err
	}
	var ui *uiserver.Server
	if o.uiPort != 0 {
		ui = uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
			Host:                o.ip,
			Port:                o.uiPort,
			TemporalGRPCAddress: fmt.Sprintf("%s:%d", o.ip, o.port),
			EnableUI:            true,
			DisableNewsFetch:    true, // no internet on the machines this runs on
			CORS:                uiconfig.CORS{CookieInsecure: true},
			HideLogs:            true,
		}))
		go func() {
			if err := ui.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "glidepath-temporal-dev: the Web UI stopped:", err)
				os.Exit(1)
			}
		}()
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
	if ui != nil {
		ui.Stop()
	}
	server.Stop()
	return nil
}

// dynamicConfig is some of the settings the CLI's dev server sets (search attributes visible at once, so more
// persistence QPS), then the caller's.
func dynamicConfig(o *options) dynamicconfig.StaticClient {
	dc := dynamicconfig.StaticClient{
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key():                        8096,
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key():        100,
		dynamicconfig.MakeKey("system.forceSearchAttributesCacheRefreshOnRead"): true,
		dynamicconfig.MakeKey("frontend.persistenceMaxQPS"):                     10000,
		dynamicconfig.MakeKey("history.persistenceMaxQPS"):                      45000,
	}
	for k, v := range o.dynamicConfig {
		dc[dynamicconfig.MakeKey(k)] = v
	}
	return dc
}

func serverConfig(o *options) (*config.Config, error) {
	var conf config.Config
	frontend := fmt.Sprintf("%s:%d", o.ip, o.port)
	conf.Global.Membership.BroadcastAddress = o.ip
	if o.metricsPort != 0 {
		conf.Global.Metrics = &metrics.Config{Prometheus: &metrics.PrometheusConfig{
			ListenAddress: fmt.Sprintf("%s:%d", o.ip, o.metricsPort),
			HandlerPath:   "/metrics",
		}}
	}
	sql, err := sqlStore(o)
	if err != nil {
		return nil, err
	}
	conf.Persistence.DefaultStore = "sqlite"
	conf.Persistence.VisibilityStore = "sqlite"
	conf.Persistence.NumHistoryShards = 1
	conf.Persistence.DataStores = map[string]config.DataStore{"sqlite": {SQL: sql}}
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{clusterName: {
			Enabled:                true,
			InitialFailoverVersion: 1,
			RPCAddress:             frontend,
			HTTPAddress:            fmt.Sprintf("%s:%d", o.ip, o.httpPort),
			ClusterID:              uuid.NewString(),
		}},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	service := func(grpcPort, httpPort int) config.Service {
		var s config.Service
		s.RPC.BindOnIP, s.RPC.GRPCPort, s.RPC.HTTPPort = o.ip, grpcPort, httpPort
		return s
	}
	conf.Services = map[string]config.Service{string(primitives.FrontendService): service(o.port, o.httpPort)}
	// The other services listen on free ports of their own: no one outside the server calls them.
	for _, name := range []primitives.ServiceName{primitives.HistoryService, primitives.MatchingService, primitives.WorkerService} {
		port, err := freePort(o.ip)
		if err != nil {
			return nil, err
		}
		conf.Services[string(name)] = service(port, 0)
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = frontend
	return &conf, nil
}

// freePort is a port free now; the server binds it a moment later (a start that lost it to another process
// fails with "address already in use" and is started again by the caller).
func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// sqlStore is the SQLite store: the schema on a new file (or in memory), then the namespaces with their
// search attributes (kept when they exist).
func sqlStore(o *options) (*config.SQL, error) {
	sql := &config.SQL{PluginName: sqliteplugin.PluginName}
	fresh := false // an in-memory database gets its schema from the plugin
	if o.dbFile == "" {
		sql.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
		sql.DatabaseName = uuid.NewString()
	} else {
		sql.ConnectAttributes = map[string]string{"mode": "rwc"}
		sql.DatabaseName = o.dbFile
		if _, err := os.Stat(filepath.Dir(o.dbFile)); err != nil {
			return nil, fmt.Errorf("--db-filename %s: %w", o.dbFile, err)
		}
		_, err := os.Stat(o.dbFile)
		fresh = os.IsNotExist(err)
	}
	if fresh {
		if err := sqliteschema.SetupSchema(sql); err != nil {
			return nil, fmt.Errorf("setting up the SQLite schema: %w", err)
		}
	}
	var namespaces []*sqliteschema.NamespaceConfig
	for _, ns := range o.namespaces {
		c, err := sqliteschema.NewNamespaceConfig(clusterName, ns, false, o.searchAttributes)
		if err != nil {
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
		namespaces = append(namespaces, c)
	}
	if err := sqliteschema.CreateNamespaces(sql, namespaces...); err != nil {
		return nil, fmt.Errorf("creating the namespaces: %w", err)
	}
	return sql, nil
}
