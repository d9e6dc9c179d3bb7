"""A checkpoint: a folder `from_pretrained` can read, and what this project knows about it.

A checkpoint is config.json, model.safetensors, the tokenizer (spiece.model +
tokenizer files) and, when this project wrote it, albert_lab.json: the spec (incl.
sharing strategy), the objective the pair head was trained with, provenance and
metrics. One module per topic, lowest first:

  files     the file names, the readers of card, config and safetensors header, the
            spec of a folder, and the one decision whether a source is a local folder
  heads     which heads are trained, untrained, missing or a probe, and the words for it
  store     atomic save, and both halves of the recovery after a save that was killed
  loadable  a folder made loadable (an interrupted save recovered, a release converted)
            or what it is instead
  discover  a folder's summary from files alone, the shipped and run checkpoints,
            names to folders
  load      the model itself (torch and transformers), from a folder or the hub

files, heads, store, loadable and discover import neither torch nor transformers: listing
checkpoints and drawing a model card cost milliseconds (the app paints its first page
before ~3 s of imports). Import from the modules; this package re-exports nothing, so
that importing one of them never pulls in torch.
"""
