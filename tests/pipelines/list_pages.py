"""Pages with lists, shared by the tests of passage units and of extractive answers: a list of specs (one item
with a nested list) and numbered steps with a code block each, each announced by a sentence ending in a colon."""

SPECS = """The minimum specs with which Harbor runs are:

- Linux-based system (ideally Debian-based)
- 2 GB of RAM + 1 GB of swap
- 20 GB of available storage
- A storage with a good random I/O performance, in order of preference:
  - [SSD](https://example.com/ssd)
  - HDD

Of the above, disk speed matters most.
"""

STEPS = """To configure the failed authentication ban:

1. Edit `/etc/harbor/harbor.rb`:

   ```ruby
   harbor['ban'] = { 'maxretry' => 10, 'bantime' => 3600 }
   ```

1. Restart Harbor:

   ```shell
   sudo harbor-ctl restart
   ```

A banned client receives a 403 error.
"""

PAGE = f"# Small servers {{ #small }}\n\n## Requirements {{ #requirements }}\n\n{SPECS}\n## Ban {{ #ban }}\n\n{STEPS}"
