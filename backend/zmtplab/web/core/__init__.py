"""What every part of the web app shares and none owns: settings, client addresses and budgets, compact JSON, the
languages of answers and sockets, server-sent events, the job store, memory release, the command-frame reader, the
models every answer uses, and the health route. It imports none of the app's concern packages."""
