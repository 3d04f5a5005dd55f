# plots.mk — figure rules, included by the Makefile.
#   make figures RESULTS=file.h5 [X=batch|vocab|k|p] [BY=axis,...] [FACET=axis,...|none]
#                [BASELINE=algo] [FIGURE_FORMATS="png pdf svg"]
#       every figure kind the file's cells allow, peers beside the modules, into
#       plots/out/<stem>*.png and .pdf (and any other format listed); X, BY and FACET choose
#       the line figures' x axis, series and panels (docs/FIGURES.md, "Figures"; the axes: sweep,
#       dataset, vocab, batch, k, p, mode, algo)
BASELINE ?= naive_sort
FIGURE_FORMATS ?= png pdf
figures: $(BUILD)/topkp
	TOPKP=$(BUILD)/topkp BASELINE=$(BASELINE) FIGURE_FORMATS="$(FIGURE_FORMATS)" \
	    X="$(X)" BY="$(BY)" FACET="$(FACET)" bash scripts/figures.sh $(RESULTS)
