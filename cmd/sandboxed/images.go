package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/images"
)

var imagesCommand = &cli.Command{
	Name:  "images",
	Usage: "build and list the container tier's runner image",
	Subcommands: []*cli.Command{
		{
			Name:  "build",
			Usage: "build the runner image from Dockerfile.runner (FROM scratch on a local Debian base, or on --base IMAGE)",
			Description: `Without --base, the base is a Debian bookworm minbase root filesystem made with
debootstrap from the Debian mirror this machine's apt uses (installed if missing), cached under
$XDG_CACHE_HOME/sandboxed, imported through the Docker Engine API. Rebuilding an up-to-date
image does nothing.`,
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "image", Value: images.DefaultImage, Usage: "image `NAME` to tag"},
				&cli.StringFlag{Name: "base", Usage: "build on this existing `IMAGE` instead of making a base"},
				&cli.StringFlag{Name: "mirror", Usage: "Debian mirror `URL` for debootstrap (default: the one apt uses)"},
				&cli.StringFlag{Name: "cache-dir", Usage: "where base root filesystems are cached"},
				&cli.BoolFlag{Name: "force", Usage: "rebuild even when the image is up to date"},
				&cli.BoolFlag{Name: "json", Usage: "print the result as JSON, no progress"},
			},
			Action: func(c *cli.Context) error {
				opts := images.BuildOptions{
					Image: c.String("image"), Base: c.String("base"), Mirror: c.String("mirror"),
					CacheDir: c.String("cache-dir"), Force: c.Bool("force"),
				}
				if !c.Bool("json") {
					start := time.Now()
					opts.Progress = func(e images.Event) {
						fmt.Fprintf(c.App.ErrWriter, "[%5.1fs] %s\n", time.Since(start).Seconds(), e)
					}
				}
				res, err := images.Build(c.Context, opts)
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return writeJSON(c.App.Writer, res)
				}
				state := "built"
				if !res.Built {
					state = "up to date"
				}
				fmt.Fprintf(c.App.Writer, "%s %s (%s) on %s in %s\n", res.Image, state, shortID(res.ID), res.Base, res.Elapsed.Round(time.Millisecond))
				return nil
			},
		},
		{
			Name:  "list",
			Usage: "list runner images",
			Flags: []cli.Flag{formatFlag("table", "table", "json"), &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "names only"}},
			Action: func(c *cli.Context) error {
				format, err := checkFormat(c, "table", "json")
				if err != nil {
					return err
				}
				list, err := images.List(c.Context)
				if err != nil {
					return err
				}
				if format == "json" {
					if list == nil {
						list = []images.Image{}
					}
					return writeJSON(c.App.Writer, list)
				}
				if c.Bool("quiet") {
					for _, im := range list {
						for _, t := range im.Tags {
							fmt.Fprintln(c.App.Writer, t)
						}
					}
					return nil
				}
				w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "TAGS\tKIND\tID\tCREATED\tSIZE\tUP TO DATE")
				for _, im := range list {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%dMB\t%v\n", strings.Join(im.Tags, ","), im.Kind, shortID(im.ID), im.Created.Format(time.RFC3339), im.Size>>20, im.UpToDate)
				}
				return w.Flush()
			},
		},
	},
}

func shortID(id string) string {
	if len(id) > 19 {
		return id[:19]
	}
	return id
}
