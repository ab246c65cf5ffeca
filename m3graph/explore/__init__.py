"""The analysts' explorer: a local web app over the memory graph (`m3graph explore`)."""
